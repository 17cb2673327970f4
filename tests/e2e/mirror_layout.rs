//! `plinth plugin mirror --to DIR`: every plugin and policy pack a project's Plinth.lock pins,
//! with its signature, in an OCI image-layout directory that the real `skopeo` reads; a fresh
//! machine whose `$PLINTH_HOME/settings.yaml` names the directory as the registry's mirror
//! runs the project from it with the registry gone. Also what `plugin inspect oci://…` and
//! `plugin ls` say of who signed what, and where it came from.

use plinth_test_registry::Registry;

use crate::policy_registry::publish_pack;
use crate::registry::{Client, sha256, skopeo, testkit, testkit_version};
use crate::signing::make_key;
use crate::support::{Env, guest};

const SIGNATURE_TYPE: &str = "application/vnd.plinth.plugin.signature.v1+minisign";

/// Publishes the testkit plugin to `repo`, signed with `key` if given; the manifest's digest
/// and the signer's key id.
fn publish_testkit(client: &Client, env: &Env, repo: &str, key: Option<&str>) -> (String, String) {
    let version = testkit_version(client, env);
    let (path, _) = testkit();
    let reference = format!("oci://{repo}:{version}");
    let mut args = vec!["plugin", "publish", path.to_str().unwrap(), &reference];
    if let Some(key) = key {
        args.extend(["--key", key]);
    }
    let out = client.ok(env, &args);
    let digest = out
        .lines()
        .find_map(|l| l.strip_prefix("digest: "))
        .expect(&out)
        .to_owned();
    let signer = out
        .lines()
        .find_map(|l| l.strip_prefix("signed by key "))
        .and_then(|l| l.split(':').next())
        .unwrap_or_default()
        .to_owned();
    (digest, signer)
}

#[test]
fn a_mirror_directory_is_an_oci_layout_a_project_runs_from_offline() {
    let mut origin = Registry::start().unwrap();
    let publisher = Client::new();
    let bare = Env::project("name: scenario\n");
    let trusted = make_key(&publisher, &bare, "release");
    let version = testkit_version(&publisher, &bare);
    let host = origin.authority();
    let (digest, signer) = publish_testkit(
        &publisher,
        &bare,
        &format!("{host}/plinth/testkit"),
        Some("release"),
    );
    assert!(!signer.is_empty());
    publish_testkit(&publisher, &bare, &format!("{host}/unsigned/testkit"), None);
    let pack_version = env!("CARGO_PKG_VERSION");
    publish_pack(
        &publisher,
        &bare,
        &format!("{host}/policies/testpack"),
        pack_version,
        Some("release"),
    );
    let (_, bytes) = testkit();

    // `plugin inspect` of a registry's plugin names the key its signature names, or none.
    let shown = publisher.ok(
        &bare,
        &[
            "plugin",
            "inspect",
            &format!("oci://{host}/plinth/testkit:{version}"),
        ],
    );
    assert!(
        shown.contains(&format!(
            "signer:       key {signer} (its signature checked"
        )) && shown.contains(&format!("manifest:     {digest}")),
        "{shown}"
    );
    let shown = publisher.ok(
        &bare,
        &[
            "plugin",
            "inspect",
            &format!("oci://{host}/unsigned/testkit"),
            "--json",
        ],
    );
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["signer"], "none: not signed", "{shown}");

    // A project pinning a registry plugin and a registry pack, both signed.
    let project = Env::project(&format!(
        "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    source: oci://{host}/plinth/testkit\n    \
         version: \"{version}\"\ntrust:\n  keys: [\"{trusted}\"]\n\
         policy-packs:\n  - oci://{host}/policies/testpack:{pack_version}\n",
        guest("plinth-scenario").display()
    ));
    let connected = Client::new();
    let out = connected.ok(&project, &["plugin", "lock"]);
    assert!(
        out.contains("pinned `testkit`") && out.contains("pinned the policy pack"),
        "{out}"
    );
    let lock = std::fs::read_to_string(project.project.join("Plinth.lock")).unwrap();

    // Mirrored into a directory: an OCI image layout, named by repository and tag.
    let carried = tempfile::tempdir().unwrap();
    let dir = carried.path().join("mirror");
    let out = connected.ok(
        &project,
        &["plugin", "mirror", "--to", dir.to_str().unwrap()],
    );
    assert!(
        out.contains(&format!(
            "Copied `testkit` to oci:{}:plinth/testkit:{version}@{digest}, with its signature",
            dir.display()
        )) && out.contains("Copied the policy pack")
            && out.contains(&format!("PLINTH_PLUGIN_MIRROR=file://{}", dir.display())),
        "{out}"
    );
    for file in ["oci-layout", "index.json"] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    assert!(dir.join("blobs/sha256").join(sha256(&bytes)).is_file());

    // The real skopeo reads it: the plugin, in the standard Wasm layout, and its signature.
    let raw = skopeo(&[
        "inspect",
        "--raw",
        &format!("oci:{}:plinth/testkit:{version}", dir.display()),
    ]);
    assert_eq!(format!("sha256:{}", sha256(raw.as_bytes())), digest);
    let manifest: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(
        manifest["layers"][0]["digest"],
        format!("sha256:{}", sha256(&bytes))
    );
    let signature_tag = format!("{}.sig", digest.replacen(':', "-", 1));
    let raw = skopeo(&[
        "inspect",
        "--raw",
        &format!("oci:{}:plinth/testkit:{signature_tag}", dir.display()),
    ]);
    let signature: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(signature["artifactType"], SIGNATURE_TYPE, "{signature}");
    assert_eq!(signature["subject"]["digest"], digest, "{signature}");
    skopeo(&[
        "inspect",
        "--raw",
        &format!("oci:{}:policies/testpack:{pack_version}", dir.display()),
    ]);

    // Mirroring again adds to the layout, naming each artifact once.
    connected.ok(
        &project,
        &["plugin", "mirror", "--to", dir.to_str().unwrap()],
    );
    let index = std::fs::read_to_string(dir.join("index.json")).unwrap();
    assert_eq!(
        index
            .matches(&format!("\"plinth/testkit:{version}\""))
            .count(),
        1,
        "{index}"
    );

    // The registry is gone. A fresh machine whose settings name the directory as its mirror
    // runs the project: the same digests, the same signatures, verified from the lock.
    origin.stop();
    let offline = Client::new();
    std::fs::write(
        offline.home.path().join("settings.yaml"),
        format!("mirrors:\n  {host}: file://{}\n", dir.display()),
    )
    .unwrap();
    let out = offline.ok(&project, &["up", "--yes"]);
    assert!(out.contains("created"), "{out}");
    assert_eq!(
        std::fs::read_to_string(project.project.join("Plinth.lock")).unwrap(),
        lock
    );
    assert_eq!(
        std::fs::read(
            offline
                .home
                .path()
                .join(format!("plugins/sha256/{}.wasm", sha256(&bytes)))
        )
        .unwrap(),
        bytes
    );

    // `plugin ls` lists what the run fetched for the lock: signer and source.
    let listed: serde_json::Value =
        serde_json::from_str(&offline.ok(&project, &["plugin", "ls", "--json"])).unwrap();
    let testkit = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "testkit")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(testkit["pinned"], true, "{testkit}");
    assert_eq!(testkit["signer"], signer, "{testkit}");
    assert_eq!(
        testkit["source"],
        format!("oci:{}:plinth/testkit@{digest}", dir.display()),
        "{testkit}"
    );
    let table = offline.ok(&project, &["plugin", "ls"]);
    assert!(
        table.contains("SIGNER") && table.contains(&signer) && table.contains("policy pack"),
        "{table}"
    );

    // `plugin inspect` follows the mirror rule too.
    let shown = offline.ok(
        &project,
        &[
            "plugin",
            "inspect",
            &format!("oci://{host}/plinth/testkit:{version}"),
        ],
    );
    assert!(shown.contains(&format!("key {signer}")), "{shown}");

    // A rule naming something that is not a layout says so.
    std::fs::write(
        offline.home.path().join("settings.yaml"),
        format!("mirrors:\n  {host}: file://{}\n", carried.path().display()),
    )
    .unwrap();
    let stderr = offline.fails(
        &project,
        &[
            "plugin",
            "pull",
            &format!("oci://{host}/plinth/testkit:{version}"),
        ],
    );
    assert!(stderr.contains("is not an OCI image layout"), "{stderr}");
}
