//! Test support: a real headless Chromium, driven over WebDriver. `chromedriver` is started on
//! a free loopback port (it says which once it listens: no polling), one browser session is
//! opened in a profile of its own, and both are stopped when the [`Browser`] is dropped, whatever
//! the test did. Debian's `chromium` and `chromium-driver` (scripts/setup installs them).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use base64::Engine;
use serde_json::{Value, json};

/// What went wrong driving the browser.
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn error(what: impl std::fmt::Display) -> Error {
    Error(what.to_string())
}

/// The key WebDriver names an element by.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A headless Chromium session and the chromedriver serving it.
pub struct Browser {
    driver: Child,
    base: String,
    agent: ureq::Agent,
    _profile: tempfile::TempDir,
}

/// An element of the current page, as WebDriver names it.
#[derive(Debug, Clone)]
pub struct Element(String);

/// The chromedriver to run: `PLINTH_TEST_CHROMEDRIVER`, or the one on `PATH`.
fn driver_binary() -> String {
    std::env::var("PLINTH_TEST_CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into())
}

/// The browser: `PLINTH_TEST_CHROMIUM`, or Debian's.
fn chromium_binary() -> String {
    std::env::var("PLINTH_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())
}

impl Browser {
    /// Starts chromedriver and a headless browser session in a new profile.
    pub fn start() -> Result<Browser> {
        let (driver, port) = start_driver(&driver_binary())?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let profile = tempfile::tempdir().map_err(error)?;
        let mut browser = Browser {
            driver,
            base: format!("http://127.0.0.1:{port}"),
            agent,
            _profile: profile,
        };
        let capabilities = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium_binary(),
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1280,900", "--no-first-run", "--disable-extensions",
                    format!("--user-data-dir={}", browser._profile.path().display()),
                ],
            },
        } } });
        let session = browser.command("POST", "/session", Some(capabilities))?;
        let id = session["sessionId"]
            .as_str()
            .ok_or_else(|| error(format!("no session: {session}")))?;
        browser.base = format!("{}/session/{id}", browser.base);
        Ok(browser)
    }

    /// One WebDriver command: its `value`, or the error it answered.
    fn command(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value> {
        let url = format!("{}{path}", self.base);
        let request = ureq::http::Request::builder()
            .method(method)
            .uri(&url)
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(&body.unwrap_or(json!({}))).map_err(error)?)
            .map_err(error)?;
        let mut response = self.agent.run(request).map_err(error)?;
        let status = response.status().as_u16();
        let answer: Value = response.body_mut().read_json().map_err(error)?;
        let value = answer.get("value").cloned().unwrap_or(Value::Null);
        if status != 200 {
            return Err(error(format!("{method} {path}: {status} {value}")));
        }
        Ok(value)
    }

    /// Opens `url` and waits for it to load (WebDriver's navigation does).
    pub fn goto(&self, url: &str) -> Result<()> {
        self.command("POST", "/url", Some(json!({ "url": url })))
            .map(drop)
    }

    pub fn url(&self) -> Result<String> {
        Ok(self
            .command("GET", "/url", None)?
            .as_str()
            .unwrap_or("")
            .to_owned())
    }

    pub fn title(&self) -> Result<String> {
        Ok(self
            .command("GET", "/title", None)?
            .as_str()
            .unwrap_or("")
            .to_owned())
    }

    /// The page's source, as the browser holds it.
    pub fn source(&self) -> Result<String> {
        Ok(self
            .command("GET", "/source", None)?
            .as_str()
            .unwrap_or("")
            .to_owned())
    }

    /// The elements matching a CSS selector.
    pub fn find_all(&self, css: &str) -> Result<Vec<Element>> {
        let found = self.command(
            "POST",
            "/elements",
            Some(json!({ "using": "css selector", "value": css })),
        )?;
        Ok((found.as_array().into_iter().flatten())
            .filter_map(|e| e[ELEMENT].as_str())
            .map(|id| Element(id.to_owned()))
            .collect())
    }

    /// The one element matching a CSS selector.
    pub fn find(&self, css: &str) -> Result<Element> {
        let found = self.command(
            "POST",
            "/element",
            Some(json!({ "using": "css selector", "value": css })),
        )?;
        found[ELEMENT]
            .as_str()
            .map(|id| Element(id.to_owned()))
            .ok_or_else(|| error(format!("no element `{css}`: {found}")))
    }

    /// Clicks an element, and waits for the page a link or form loads.
    pub fn click(&self, element: &Element) -> Result<()> {
        self.command("POST", &format!("/element/{}/click", element.0), None)
            .map(drop)
    }

    /// Types `text` into an element.
    pub fn type_into(&self, element: &Element, text: &str) -> Result<()> {
        self.command(
            "POST",
            &format!("/element/{}/value", element.0),
            Some(json!({ "text": text })),
        )
        .map(drop)
    }

    /// An element's rendered text.
    pub fn text(&self, element: &Element) -> Result<String> {
        let text = self.command("GET", &format!("/element/{}/text", element.0), None)?;
        Ok(text.as_str().unwrap_or("").to_owned())
    }

    /// An element's attribute, if it has it.
    pub fn attribute(&self, element: &Element, name: &str) -> Result<Option<String>> {
        let value = self.command(
            "GET",
            &format!("/element/{}/attribute/{name}", element.0),
            None,
        )?;
        Ok(value.as_str().map(str::to_owned))
    }

    /// Runs `script` in the page (WebDriver's, which the page's CSP does not govern): its
    /// result.
    pub fn execute(&self, script: &str) -> Result<Value> {
        self.command(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": [] })),
        )
    }

    /// Saves a PNG of the window to `path`.
    pub fn screenshot(&self, path: &Path) -> Result<()> {
        let png = self.command("GET", "/screenshot", None)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap_or(""))
            .map_err(error)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(error)?;
        }
        std::fs::write(path, bytes).map_err(error)
    }

    /// The browser's cookies, as WebDriver describes them (name, value, httpOnly, sameSite…).
    pub fn cookies(&self) -> Result<Vec<Value>> {
        Ok(self
            .command("GET", "/cookie", None)?
            .as_array()
            .cloned()
            .unwrap_or_default())
    }
}

/// How many times chromedriver is started before giving up: on port 0 it picks a port free on
/// IPv4, then exits ("IPv6 port not available") if another process holds that port on IPv6.
const DRIVER_STARTS: usize = 5;

/// A chromedriver (`binary`) listening, and its port.
fn start_driver(binary: &str) -> Result<(Child, u16)> {
    let mut said = Vec::new();
    for _ in 0..DRIVER_STARTS {
        // Port 0: chromedriver picks a free port and prints it.
        let mut driver = Command::new(binary)
            // Local connections only, its default.
            .arg("--port=0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                error(format!(
                    "cannot run {binary} ({e}): install chromium-driver (scripts/setup does)"
                ))
            })?;
        match listening_port(&mut driver) {
            Ok(port) => return Ok((driver, port)),
            Err(lines) => {
                let _ = driver.kill();
                let _ = driver.wait();
                said = lines;
            }
        }
    }
    Err(error(format!(
        "chromedriver did not say which port it listens on, started {DRIVER_STARTS} times; the \
         last said: {}",
        said.join(" / ")
    )))
}

/// The port chromedriver says it listens on, read from its first lines; or those lines.
fn listening_port(driver: &mut Child) -> std::result::Result<u16, Vec<String>> {
    let stdout = (driver.stdout.take()).ok_or_else(|| vec!["(no stdout)".to_owned()])?;
    let mut lines = BufReader::new(stdout).lines();
    let mut said = Vec::new();
    for line in lines.by_ref().take(20) {
        let Ok(line) = line else { break };
        // "ChromeDriver was started successfully on port 41235."
        if let Some(rest) = line.split("started successfully on port ").nth(1)
            && let Ok(port) = rest.trim_end_matches('.').trim().parse()
        {
            // The rest of its output is drained, so it never blocks writing it.
            std::thread::spawn(move || lines.for_each(drop));
            return Ok(port);
        }
        said.push(line);
    }
    Err(said)
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.command("DELETE", "", None);
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Held by each test while it writes and runs its script: a fork by the other test while
    /// one's script is open for writing would make running it fail ("text file busy").
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    /// A stand-in chromedriver: a script that exits as chromedriver does when the port it
    /// picked is taken on IPv6, `failures` times (counted in a file), then says its port and
    /// stays up.
    fn flaky_driver(dir: &Path, failures: usize) -> String {
        let script = dir.join("driver");
        let count = dir.join("starts");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\n\
                 echo x >> '{count}'\n\
                 echo 'Starting ChromeDriver on port 40283'\n\
                 if [ $(wc -l < '{count}') -le {failures} ]; then\n\
                 echo 'IPv6 port not available. Exiting...'; exit 1\n\
                 fi\n\
                 echo 'ChromeDriver was started successfully on port 40283.'\n\
                 exec sleep 600\n",
                count = count.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        script.display().to_string()
    }

    #[test]
    fn a_driver_that_exits_before_listening_is_started_again() {
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let (mut driver, port) = start_driver(&flaky_driver(dir.path(), 2)).unwrap();
        assert_eq!(port, 40283);
        let starts = std::fs::read_to_string(dir.path().join("starts")).unwrap();
        assert_eq!(starts.lines().count(), 3);
        driver.kill().unwrap();
        driver.wait().unwrap();
    }

    #[test]
    fn a_driver_that_never_listens_is_given_up_saying_what_it_said() {
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let refused = start_driver(&flaky_driver(dir.path(), DRIVER_STARTS)).unwrap_err();
        assert!(refused.0.contains("IPv6 port not available"), "{refused}");
        let starts = std::fs::read_to_string(dir.path().join("starts")).unwrap();
        assert_eq!(starts.lines().count(), DRIVER_STARTS);
    }
}
