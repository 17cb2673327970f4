// Appends a running update's events to its log as the service streams them (server-sent
// events), and says how it ended. Text only: nothing received is read as markup.
"use strict";
(function () {
  var log = document.getElementById("log");
  if (!log || !log.dataset.live) {
    return;
  }
  var source = new EventSource(log.dataset.live);
  source.onmessage = function (event) {
    log.textContent += event.data + "\n";
  };
  source.addEventListener("end", function (event) {
    source.close();
    var status = document.getElementById("status");
    status.textContent = event.data;
    status.className = "ended";
  });
})();
