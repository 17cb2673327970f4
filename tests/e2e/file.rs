//! The `file` provider on the real binary: files, templates and directories written into the
//! directory a project grants it, updated in place or replaced, deleted, refused when their
//! paths would leave the root, and read back as they are on disk by `refresh`.

use std::path::{Path, PathBuf};

use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Access, DirGrant, Grants, Limits, Runtime, Tier};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::count_line;
use crate::support::{ConfigCleanup, Env, guest, repo_root};

/// A project running the `files` program on the `file` provider, with `./site` granted
/// read-write at `/root`.
struct Site {
    env: Env,
    /// Keeps the project directory alive.
    _dir: tempfile::TempDir,
}

impl Site {
    fn new() -> Site {
        Site::with_grant(
            "    grants:\n      dirs:\n        - { host: ./site, guest: /root, access: read-write }\n",
        )
    }

    /// A project whose `file` plugin entry ends with `grants_yaml`.
    fn with_grant(grants_yaml: &str) -> Site {
        let dir = tempfile::tempdir().unwrap();
        let yaml = format!(
            "name: files\nprogram: {}\nplugins:\n  file:\n    path: {}\n{grants_yaml}",
            guest("plinth-files").display(),
            guest("plinth-file").display()
        );
        std::fs::write(dir.path().join("Plinth.yaml"), yaml).unwrap();
        std::fs::create_dir(dir.path().join("site")).unwrap();
        let env = Env::in_dir(dir.path().to_owned(), "dev");
        Site { env, _dir: dir }
    }

    /// The host side of the granted directory.
    fn root(&self) -> PathBuf {
        self.env.project.join("site")
    }

    fn files(&self, spec: serde_json::Value) {
        self.env.config("files", &spec.to_string());
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root().join(path)).unwrap()
    }

    fn outputs(&self) -> serde_json::Value {
        serde_json::from_str(&self.env.ok(&["stack", "output", "--json"])).unwrap()
    }

    /// The ids of the stack's `file:` resources (its provider resource aside), sorted.
    fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.env.export()["snapshot"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["type"].as_str().is_some_and(|t| t.starts_with("file:")))
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    }

    /// Every path under the root, relative to it, sorted.
    fn tree(&self) -> Vec<String> {
        let mut found = Vec::new();
        let mut dirs = vec![self.root()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let relative = path.strip_prefix(self.root()).unwrap();
                found.push(relative.to_string_lossy().into_owned());
                if path.is_dir() && !path.is_symlink() {
                    dirs.push(path);
                }
            }
        }
        found.sort();
        found
    }
}

fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn site_spec(readme: &str, title: &str) -> serde_json::Value {
    json!({
        "docs": {"type": "Directory", "path": "docs"},
        "readme": {"type": "File", "path": "./README.md", "content": readme, "mode": "644"},
        "index": {
            "type": "Template", "in": "docs", "path": "index.html",
            "template": "<h1>{{ title }}</h1>\n<p>{{ visits }} visits</p>\n",
            "vars": {"title": title, "visits": 3},
        },
    })
}

#[test]
fn up_writes_the_files_and_destroy_removes_them() {
    let site = Site::new();
    site.files(site_spec("hello\n", "Home"));
    let out = site.env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("3 created"), "{out}");

    assert_eq!(site.tree(), ["README.md", "docs", "docs/index.html"]);
    assert_eq!(site.read("README.md"), "hello\n");
    let index = "<h1>Home</h1>\n<p>3 visits</p>\n";
    assert_eq!(site.read("docs/index.html"), index);

    let outputs = site.outputs();
    assert_eq!(outputs["readme"]["path"], "README.md");
    assert_eq!(outputs["readme"]["size"].as_f64(), Some(6.0));
    assert_eq!(outputs["readme"]["sha256"], sha256("hello\n"));
    assert_eq!(outputs["index"]["path"], "docs/index.html");
    assert_eq!(outputs["index"]["sha256"], sha256(index));
    assert_eq!(outputs["docs"], json!({"path": "docs"}));
    assert_eq!(site.ids(), ["README.md", "docs", "docs/index.html"]);
    let state = site.env.export();
    let readme = state["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "README.md")
        .unwrap()
        .clone();
    assert_eq!(readme["outputs"]["mode"], "0644", "{readme}");

    let out = site.env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("no changes"), "{out}");

    // The directory is deleted after the template written into it.
    site.env.ok(&["destroy", "--yes"]);
    assert!(site.tree().is_empty(), "{:?}", site.tree());
    assert!(site.ids().is_empty());
}

#[test]
fn content_changes_update_in_place_and_path_changes_replace() {
    let site = Site::new();
    site.files(site_spec("one\n", "Home"));
    site.env.ok(&["up", "--yes"]);
    let before = site.ids();

    site.files(site_spec("two\n", "Start"));
    let out = site.env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("2 updated, 1 unchanged"), "{out}");
    assert_eq!(site.ids(), before);
    assert_eq!(site.read("README.md"), "two\n");
    assert!(site.read("docs/index.html").starts_with("<h1>Start</h1>"));

    let mut moved = site_spec("two\n", "Start");
    moved["readme"]["path"] = json!("notes/README.txt");
    site.files(moved);
    let out = site.env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 replaced"), "{out}");
    assert_eq!(
        site.tree(),
        ["docs", "docs/index.html", "notes", "notes/README.txt"]
    );
    assert_eq!(site.read("notes/README.txt"), "two\n");
    assert_eq!(site.ids(), ["docs", "docs/index.html", "notes/README.txt"]);

    // The provider removes the files it wrote, not the directories it made for them.
    site.env.ok(&["destroy", "--yes"]);
    assert_eq!(site.tree(), ["notes"]);
}

#[test]
fn paths_outside_the_root_and_unknown_variables_fail_check() {
    let site = Site::new();
    for (path, expected) in [
        (
            "../escape.txt",
            "contains `..`: a path must stay inside the root",
        ),
        (
            "/etc/passwd",
            "is absolute: give a path relative to the root",
        ),
    ] {
        site.files(json!({"f": {"type": "File", "path": path, "content": "x"}}));
        let stderr = site.env.fails(&["up", "--yes"]);
        assert!(stderr.contains(expected), "{path}: {stderr}");
    }
    site.files(json!({"t": {
        "type": "Template", "path": "t.txt", "template": "{{ greeting }}, {{ who }}",
        "vars": {"greeting": "hi"},
    }}));
    let stderr = site.env.fails(&["preview"]);
    assert!(
        stderr.contains("the template uses `who` but `vars` does not give it"),
        "{stderr}"
    );
    site.files(
        json!({"f": {"type": "File", "path": "f.txt", "content": "x", "mode": "rw-r--r--"}}),
    );
    let stderr = site.env.fails(&["preview"]);
    assert!(stderr.contains("is not a permission mode"), "{stderr}");
    assert!(site.tree().is_empty(), "{:?}", site.tree());
    assert!(site.ids().is_empty());
}

#[test]
fn a_non_empty_directory_is_kept_and_named() {
    let site = Site::new();
    site.files(json!({"docs": {"type": "Directory", "path": "docs"}}));
    site.env.ok(&["up", "--yes"]);
    std::fs::write(site.root().join("docs/theirs.txt"), "not ours").unwrap();

    let stderr = site.env.fails(&["destroy", "--yes"]);
    assert!(
        stderr.contains("the directory `docs` in /root is not empty (1 entry: theirs.txt)"),
        "{stderr}"
    );
    assert_eq!(site.read("docs/theirs.txt"), "not ours");
    assert_eq!(site.ids(), ["docs"]);

    std::fs::remove_file(site.root().join("docs/theirs.txt")).unwrap();
    site.env.ok(&["destroy", "--yes"]);
    assert!(site.tree().is_empty());
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_root_are_not_followed() {
    let site = Site::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "keep me").unwrap();
    std::os::unix::fs::symlink(outside.path(), site.root().join("out")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        site.root().join("link.txt"),
    )
    .unwrap();

    // Writing through a linked directory is refused by the sandbox.
    site.files(json!({"f": {"type": "File", "path": "out/x.txt", "content": "escaped"}}));
    let stderr = site.env.fails(&["up", "--yes"]);
    assert!(
        stderr
            .contains("`out/x.txt` in /root: `out` is a symbolic link that leads out of the root"),
        "{stderr}"
    );
    assert!(!outside.path().join("x.txt").exists());

    // A linked file is replaced by the written file, not written through.
    site.files(json!({"f": {"type": "File", "path": "link.txt", "content": "mine"}}));
    site.env.ok(&["up", "--yes"]);
    assert_eq!(site.read("link.txt"), "mine");
    assert!(!site.root().join("link.txt").is_symlink());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "keep me"
    );
    site.env.ok(&["destroy", "--yes"]);
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
}

#[test]
fn an_ungranted_root_is_a_clear_error() {
    let site = Site::with_grant("");
    site.files(json!({"f": {"type": "File", "path": "f.txt", "content": "x"}}));
    let stderr = site.env.fails(&["up", "--yes"]);
    assert!(
        stderr.contains("plugin `file`") && stderr.contains("/root"),
        "{stderr}"
    );
    assert!(site.ids().is_empty());
}

#[test]
fn refresh_finds_edits_and_deletions_and_up_repairs_them() {
    let site = Site::new();
    site.files(site_spec("hello\n", "Home"));
    site.env.ok(&["up", "--yes"]);

    std::fs::write(site.root().join("README.md"), "edited\n").unwrap();
    std::fs::write(site.root().join("docs/index.html"), "<h1>changed</h1>\n").unwrap();
    let out = site.env.ok(&["refresh", "--yes"]);
    assert!(count_line(&out).contains("2 drifted, 1 unchanged"), "{out}");
    assert!(out.contains(r#"content: "hello\n" => "edited\n""#), "{out}");
    site.env.fails(&["preview", "--expect-no-changes"]);
    let out = site.env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("2 updated, 1 unchanged"), "{out}");
    assert_eq!(site.read("README.md"), "hello\n");
    assert!(site.read("docs/index.html").starts_with("<h1>Home</h1>"));
    site.env.ok(&["preview", "--expect-no-changes"]);

    std::fs::remove_file(site.root().join("README.md")).unwrap();
    let out = site.env.ok(&["refresh", "--yes"]);
    assert!(count_line(&out).contains("1 gone"), "{out}");
    assert_eq!(site.ids(), ["docs", "docs/index.html"]);
    let out = site.env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 created"), "{out}");
    assert_eq!(site.read("README.md"), "hello\n");
}

/// `read` (what `refresh` calls) on the plugin loaded by the runtime: content edited out of band
/// shows in the inputs and outputs, a template's rendering in its outputs, and a deleted file
/// is gone.
#[test]
fn read_reports_files_as_they_are_on_disk() {
    let root = tempfile::tempdir().unwrap();
    let plugin = guest("plinth-file");
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(read_scenario(root.path(), &plugin));
}

async fn read_scenario(root: &Path, plugin: &Path) {
    let runtime = Runtime::new(repo_root().join("target/e2e-home/cache")).unwrap();
    let grants = Grants {
        dirs: vec![DirGrant {
            host: root.to_owned(),
            guest: "/root".into(),
            access: Access::ReadWrite,
        }],
        ..Grants::default()
    };
    let provider = runtime
        .load_provider("file", plugin, Limits::default(), grants, Tier::Optimized)
        .await
        .unwrap();
    provider.configure(&PropertyMap::new()).await.unwrap();
    let urn = |ty: &str| Urn::new("dev", "files", None, ty, "r");
    let map = |entries: &[(&str, Value)]| -> PropertyMap {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };

    let file = urn("file:File");
    let inputs = map(&[("path", "a.txt".into()), ("content", "v1\n".into())]);
    let created = provider.create(&file, &inputs, false).await.unwrap();
    assert_eq!(created.id, "a.txt");
    let read = provider
        .read(&file, &created.id, &inputs, &created.outputs)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (read.inputs.clone(), read.outputs.clone()),
        (inputs.clone(), created.outputs.clone())
    );

    std::fs::write(root.join("a.txt"), "edited\n").unwrap();
    let read = provider
        .read(&file, &created.id, &inputs, &created.outputs)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.inputs["content"], Value::from("edited\n"));
    assert_eq!(read.outputs["sha256"], Value::from(sha256("edited\n")));
    assert_eq!(read.outputs["size"], Value::Number(7.0));

    std::fs::remove_file(root.join("a.txt")).unwrap();
    let gone = provider
        .read(&file, &created.id, &inputs, &created.outputs)
        .await
        .unwrap();
    assert!(gone.is_none(), "{gone:?}");

    // A template's file edited out of band: its digest changes, and `diff` against the same
    // inputs then asks for the file to be rewritten.
    let template = urn("file:Template");
    let inputs = map(&[
        ("path", "t.txt".into()),
        ("template", "{{ n }}".into()),
        ("vars", Value::Object(map(&[("n", 1.0.into())]))),
    ]);
    let created = provider.create(&template, &inputs, false).await.unwrap();
    assert_eq!(std::fs::read_to_string(root.join("t.txt")).unwrap(), "1");
    std::fs::write(root.join("t.txt"), "2").unwrap();
    let read = provider
        .read(&template, &created.id, &inputs, &created.outputs)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.inputs, inputs);
    assert_eq!(read.outputs["sha256"], Value::from(sha256("2")));
    let diff = provider
        .diff(&template, &created.id, &read.inputs, &read.outputs, &inputs)
        .await
        .unwrap();
    assert_eq!(diff.changed, ["template"]);
    assert!(diff.replaces.is_empty());
}

#[test]
fn site_example_lifecycle() {
    let dir = repo_root().join("examples/site");
    let public = dir.join("public");
    let stack = "e2e-site";
    let _cleanup = ConfigCleanup(dir.join(format!("Plinth.{stack}.yaml")));
    let env = Env::in_dir(dir, stack);

    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("4 created"), "{out}");
    let index = std::fs::read_to_string(public.join("index.html")).unwrap();
    assert!(index.contains("<title>A plinth site</title>"), "{index}");
    assert!(
        index.contains("<li><a href=\"site.json\">Config</a></li>"),
        "{index}"
    );
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(public.join("site.json")).unwrap()).unwrap();
    assert_eq!(config["title"], "A plinth site");
    assert!(public.join("assets/site.css").is_file());

    env.config("title", "Gardens & Co");
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("2 updated, 2 unchanged"), "{out}");
    let index = std::fs::read_to_string(public.join("index.html")).unwrap();
    assert!(index.contains("<h1>Gardens &amp; Co</h1>"), "{index}");

    env.ok(&["destroy", "--yes"]);
    let left: Vec<_> = std::fs::read_dir(&public)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [".gitignore"]);
}
