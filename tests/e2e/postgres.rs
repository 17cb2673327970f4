//! The postgresql provider against a real PostgreSQL server: every effect is checked in the
//! server's catalogs with psql, never by trusting what the provider reports. Each test uses
//! names of its own, so the tests share one server and run in parallel.

use std::sync::Arc;

use plinth_test_postgres::Postgres;
use serde_json::{Value as Json, json};

use crate::support::{Env, guest};

/// A project with the pg test program, the postgresql provider granted `tcp` (a YAML list, or
/// none) and the random provider; configured for `server` as its superuser.
pub(crate) fn project(server: &Postgres, tcp: Option<&str>) -> Env {
    let grants = tcp
        .map(|list| format!("    grants:\n      tcp: {list}\n"))
        .unwrap_or_default();
    let env = Env::project(&format!(
        "name: scenario\nprogram: {}\nplugins:\n  postgresql:\n    path: {}\n{grants}  random:\n    path: {}\n",
        guest("plinth-pg-program").display(),
        guest("plinth-postgresql").display(),
        guest("plinth-random").display(),
    ));
    configure_for(&env, server);
    env
}

/// Configures `env`'s postgresql provider for `server`, as its superuser.
pub(crate) fn configure_for(env: &Env, server: &Postgres) {
    env.config("postgresql:host", server.host());
    env.config("postgresql:port", &server.port().to_string());
    give_password(env, server);
}

/// Gives `env`'s postgresql provider the superuser's password of `server`, as a secret.
pub(crate) fn give_password(env: &Env, server: &Postgres) {
    env.ok(&[
        "config",
        "set",
        "postgresql:password",
        server.password(),
        "--secret",
    ]);
}

/// A project granted exactly the server's endpoint.
pub(crate) fn granted(server: &Postgres) -> Env {
    project(server, Some(&format!("[\"127.0.0.1:{}\"]", server.port())))
}

pub(crate) fn shared() -> Arc<Postgres> {
    Postgres::shared().expect("a PostgreSQL server for the tests")
}

pub(crate) fn declare(env: &Env, resources: &Json) {
    env.config("resources", &resources.to_string());
}

/// One psql answer, trimmed.
pub(crate) fn q(server: &Postgres, db: &str, sql: &str) -> String {
    server.psql(db, sql).unwrap().trim().to_owned()
}

pub(crate) use crate::count_line;

pub(crate) fn role(name: &str, inputs: Json) -> Json {
    json!({"type": "postgresql:Role", "name": name, "inputs": inputs})
}

#[test]
fn roles_databases_schemas_grants_and_extensions_live_on_the_server() {
    let pg = shared();
    let env = granted(&pg);
    let spec = |conn_limit: i64, db_name: &str, privileges: Json, encoding: &str| {
        json!([
            role("app", json!({"name": "lc_app", "login": true, "connection_limit": conn_limit,
                               "password": {"$password": 20}})),
            role("readers", json!({"name": "lc_readers"})),
            {"type": "postgresql:GrantRole", "name": "member",
             "inputs": {"role": {"$output": ["app", "name"]}, "grant_role": {"$output": ["readers", "name"]}}},
            {"type": "postgresql:Database", "name": "db",
             "inputs": {"name": db_name, "owner": {"$output": ["app", "name"]},
                        "encoding": encoding, "template": "template0", "connection_limit": 7}},
            {"type": "postgresql:Schema", "name": "schema",
             "inputs": {"name": "lc_data", "database": {"$output": ["db", "name"]},
                        "owner": {"$output": ["app", "name"]}, "drop_cascade": true}},
            {"type": "postgresql:Grant", "name": "connect",
             "inputs": {"role": {"$output": ["readers", "name"]}, "database": {"$output": ["db", "name"]},
                        "object_type": "database", "privileges": ["CONNECT"]}},
            {"type": "postgresql:Grant", "name": "usage",
             "inputs": {"role": {"$output": ["readers", "name"]}, "database": {"$output": ["db", "name"]},
                        "object_type": "schema", "schema": {"$output": ["schema", "name"]},
                        "privileges": privileges}},
            {"type": "postgresql:DefaultPrivileges", "name": "future_tables",
             "inputs": {"role": {"$output": ["readers", "name"]}, "database": {"$output": ["db", "name"]},
                        "owner": {"$output": ["app", "name"]}, "schema": {"$output": ["schema", "name"]},
                        "object_type": "table", "privileges": ["SELECT"]}},
            {"type": "postgresql:Extension", "name": "hstore",
             "inputs": {"name": "hstore", "database": {"$output": ["db", "name"]},
                        "schema": {"$output": ["schema", "name"]}}},
        ])
    };

    // Create.
    declare(&env, &spec(3, "lc_db", json!(["USAGE"]), "UTF8"));
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("created"), "{out}");
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT rolcanlogin, rolconnlimit, rolpassword LIKE 'SCRAM-SHA-256$%' FROM pg_authid WHERE rolname = 'lc_app'"
        ),
        "t|3|t"
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT rolcanlogin FROM pg_roles WHERE rolname = 'lc_readers'"
        ),
        "f"
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT pg_has_role('lc_app', 'lc_readers', 'MEMBER')"
        ),
        "t"
    );
    let db_oid = q(
        &pg,
        "postgres",
        "SELECT oid FROM pg_database WHERE datname = 'lc_db'",
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT pg_get_userbyid(datdba), pg_encoding_to_char(encoding), datconnlimit FROM pg_database WHERE datname = 'lc_db'"
        ),
        "lc_app|UTF8|7"
    );
    assert_eq!(
        q(
            &pg,
            "lc_db",
            "SELECT schema_owner FROM information_schema.schemata WHERE schema_name = 'lc_data'"
        ),
        "lc_app"
    );
    assert_eq!(
        q(
            &pg,
            "lc_db",
            "SELECT has_database_privilege('lc_readers', 'lc_db', 'CONNECT'), has_schema_privilege('lc_readers', 'lc_data', 'USAGE'), has_schema_privilege('lc_readers', 'lc_data', 'CREATE')"
        ),
        "t|t|f"
    );
    assert_eq!(
        q(
            &pg,
            "lc_db",
            "SELECT e.extversion <> '' AND n.nspname = 'lc_data' FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE extname = 'hstore'"
        ),
        "t"
    );
    // Default privileges: a table the owner creates later is readable by the readers.
    pg.psql(
        "lc_db",
        "SET ROLE lc_app; CREATE TABLE lc_data.later (x int)",
    )
    .unwrap();
    assert_eq!(
        q(
            &pg,
            "lc_db",
            "SELECT has_table_privilege('lc_readers', 'lc_data.later', 'SELECT'), has_table_privilege('lc_readers', 'lc_data.later', 'INSERT')"
        ),
        "t|f"
    );
    env.ok(&["preview", "--expect-no-changes"]);

    // Update in place: the connection limit, the schema privileges, the database's name.
    declare(
        &env,
        &spec(5, "lc_db_renamed", json!(["USAGE", "CREATE"]), "UTF8"),
    );
    let out = env.ok(&["up", "--yes"]);
    for kind in ["Role", "Database", "Schema", "Extension"] {
        let kind = format!("postgresql:{kind} ");
        assert!(
            out.lines()
                .any(|l| l.contains(&kind) && l.contains("updated")),
            "{kind} is updated in place: {out}"
        );
    }
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT rolconnlimit FROM pg_roles WHERE rolname = 'lc_app'"
        ),
        "5"
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT oid FROM pg_database WHERE datname = 'lc_db_renamed'"
        ),
        db_oid,
        "the database is renamed in place"
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT count(*) FROM pg_database WHERE datname = 'lc_db'"
        ),
        "0"
    );
    assert_eq!(
        q(
            &pg,
            "lc_db_renamed",
            "SELECT has_schema_privilege('lc_readers', 'lc_data', 'CREATE')"
        ),
        "t"
    );
    env.ok(&["preview", "--expect-no-changes"]);

    // Replace: the encoding is fixed at creation.
    declare(
        &env,
        &spec(5, "lc_db_renamed", json!(["USAGE", "CREATE"]), "SQL_ASCII"),
    );
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("replaced"), "{out}");
    assert_eq!(
        q(&pg, "postgres", "SELECT pg_encoding_to_char(encoding), oid::text <> '{db_oid}' FROM pg_database WHERE datname = 'lc_db_renamed'"
            .replace("{db_oid}", &db_oid).as_str()),
        "SQL_ASCII|t"
    );
    assert_eq!(
        q(
            &pg,
            "lc_db_renamed",
            "SELECT has_schema_privilege('lc_readers', 'lc_data', 'CREATE')"
        ),
        "t",
        "what depends on the database is re-created in the new one"
    );

    // Destroy leaves nothing.
    env.ok(&["destroy", "--yes"]);
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT count(*) FROM pg_roles WHERE rolname IN ('lc_app', 'lc_readers')"
        ),
        "0"
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT count(*) FROM pg_database WHERE datname LIKE 'lc_db%'"
        ),
        "0"
    );
}

#[test]
fn refresh_finds_changes_and_drops_made_out_of_band() {
    let pg = shared();
    let env = granted(&pg);
    declare(
        &env,
        &json!([
            role("owner", json!({"name": "rf_owner", "createdb": true, "connection_limit": 2})),
            {"type": "postgresql:Database", "name": "db", "inputs": {"name": "rf_db"}},
        ]),
    );
    env.ok(&["up", "--yes"]);
    env.ok(&["refresh", "--expect-no-changes"]);

    pg.psql(
        "postgres",
        "ALTER ROLE rf_owner CONNECTION LIMIT 9 NOCREATEDB",
    )
    .unwrap();
    pg.psql("postgres", "DROP DATABASE rf_db").unwrap();
    env.fails(&["refresh", "--expect-no-changes"]);
    let out = env.ok(&["refresh", "--yes"]);
    assert!(out.contains("connection_limit"), "{out}");
    let state = env.export().to_string();
    assert!(
        !state.contains("postgresql:Database::db"),
        "the dropped database leaves the state"
    );
    let role = env.export()["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type"] == "postgresql:Role")
        .cloned()
        .unwrap();
    assert_eq!(role["inputs"]["connection_limit"], json!(9), "{role}");
    assert_eq!(role["inputs"]["createdb"], json!(false), "{role}");

    // `up` puts back what the program declares.
    env.ok(&["up", "--yes"]);
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT rolconnlimit, rolcreatedb FROM pg_roles WHERE rolname = 'rf_owner'"
        ),
        "2|t"
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT count(*) FROM pg_database WHERE datname = 'rf_db'"
        ),
        "1"
    );
    env.ok(&["destroy", "--yes"]);
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT count(*) FROM pg_roles WHERE rolname = 'rf_owner'"
        ),
        "0"
    );
}

#[test]
fn existing_objects_are_imported_by_id() {
    let pg = shared();
    pg.psql("postgres", "CREATE ROLE im_role LOGIN CONNECTION LIMIT 4")
        .unwrap();
    pg.psql("postgres", "CREATE DATABASE im_db OWNER im_role")
        .unwrap();
    pg.psql("im_db", "CREATE SCHEMA im_schema AUTHORIZATION im_role")
        .unwrap();
    let env = granted(&pg);
    let role_oid = q(
        &pg,
        "postgres",
        "SELECT oid FROM pg_roles WHERE rolname = 'im_role'",
    );
    declare(
        &env,
        &json!([
            {"type": "postgresql:Role", "name": "role", "import": "im_role",
             "inputs": {"name": "im_role", "login": true, "connection_limit": 4}},
            {"type": "postgresql:Database", "name": "db", "import": "im_db",
             "inputs": {"name": "im_db", "owner": {"$output": ["role", "name"]}}},
            {"type": "postgresql:Schema", "name": "schema", "import": "im_db/im_schema",
             "inputs": {"name": "im_schema", "database": {"$output": ["db", "name"]},
                        "owner": {"$output": ["role", "name"]}}},
        ]),
    );
    env.ok(&["up", "--yes"]);
    let ids = env.resources();
    assert!(ids.contains(&("role".to_owned(), role_oid)), "{ids:?}");
    let db_oid = q(
        &pg,
        "postgres",
        "SELECT oid FROM pg_database WHERE datname = 'im_db'",
    );
    let schema_oid = q(
        &pg,
        "im_db",
        "SELECT oid FROM pg_namespace WHERE nspname = 'im_schema'",
    );
    assert!(
        ids.contains(&("schema".to_owned(), format!("{db_oid}/{schema_oid}"))),
        "{ids:?}"
    );
    env.ok(&["preview", "--expect-no-changes"]);

    // An import whose inputs differ from what exists is refused, naming the difference.
    let other = granted(&pg);
    declare(
        &other,
        &json!([{"type": "postgresql:Role", "name": "role", "import": "im_role",
                 "inputs": {"name": "im_role", "login": true, "connection_limit": 5}}]),
    );
    let err = other.fails(&["up", "--yes"]);
    assert!(err.contains("connection_limit"), "{err}");

    let out = env.run(&["destroy", "--yes"]);
    assert!(
        out.status.success(),
        "{}\nwhat depends on im_role: {}",
        String::from_utf8_lossy(&out.stderr),
        q(
            &pg,
            "postgres",
            "SELECT d.datname, s.classid::regclass, s.objid, s.deptype FROM pg_shdepend s LEFT JOIN pg_database d ON d.oid = s.dbid WHERE s.refobjid = (SELECT oid FROM pg_roles WHERE rolname = 'im_role')"
        )
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT count(*) FROM pg_roles WHERE rolname = 'im_role'"
        ),
        "0"
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT count(*) FROM pg_database WHERE datname = 'im_db'"
        ),
        "0"
    );
}

#[test]
fn the_server_endpoint_must_be_granted_exactly() {
    let pg = shared();
    let resources = json!([role("gr_role", json!({"name": "gr_role"}))]);
    let endpoint = format!("127.0.0.1:{}", pg.port());
    // The refusal names the endpoint and the Plinth.yaml lines that grant it.
    let refused = |err: &str| {
        let line = err.lines().position(|l| l.trim() == "tcp:");
        let item = line
            .and_then(|i| err.lines().nth(i + 1))
            .unwrap_or_default();
        err.contains("plugin `postgresql`")
            && err.contains("Plinth.yaml")
            && item.trim_start().starts_with("- ")
            && item.contains(&endpoint)
    };

    let none = project(&pg, None);
    declare(&none, &resources);
    let err = none.fails(&["up", "--yes"]);
    assert!(refused(&err), "the refusal shows the line to add: {err}");

    let other_port = project(&pg, Some(&format!("[\"127.0.0.1:{}\"]", pg.port() + 1)));
    declare(&other_port, &resources);
    let err = other_port.fails(&["up", "--yes"]);
    assert!(refused(&err), "{err}");
    assert!(err.contains("has `tcp:` already"), "{err}");
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT count(*) FROM pg_roles WHERE rolname = 'gr_role'"
        ),
        "0"
    );

    let exact = granted(&pg);
    // Digits, as `plinth config set` stores them; a bounded connect.
    exact.config("postgresql:connect_timeout", "10");
    declare(&exact, &resources);
    exact.ok(&["up", "--yes"]);
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT count(*) FROM pg_roles WHERE rolname = 'gr_role'"
        ),
        "1"
    );
    exact.ok(&["destroy", "--yes"]);
}

#[test]
fn the_password_never_leaves_the_secret() {
    // A server of its own: it logs every statement.
    let pg = Postgres::start().unwrap();
    pg.psql("postgres", "ALTER SYSTEM SET log_statement = 'all'")
        .unwrap();
    pg.psql("postgres", "SELECT pg_reload_conf()").unwrap();
    let env = granted(&pg);
    let password = "pw-Zq8r3TtV0xWm2N";
    env.ok(&["config", "set", "role_password", password, "--secret"]);
    declare(
        &env,
        &json!([role(
            "app",
            json!({"name": "pw_app", "login": true,
                                   "password": {"$secret": "role_password"}})
        )]),
    );
    let mut up = env.command(&["up", "--yes", "-v"]);
    up.env("RUST_LOG", "debug");
    // What `ps` shows of plinth is its command line: the password reaches plinth only as sealed
    // stack config, and the provider starts no process.
    let args: Vec<_> = up
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert!(args.iter().all(|a| !a.contains(password)), "{args:?}");
    let output = up.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let ps = std::process::Command::new("ps")
        .args(["-eww", "-o", "args"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&ps.stdout).contains(password),
        "a process shows it"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stdout.contains(password) && !stderr.contains(password),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("[secret]"), "{stdout}");

    // The password works: the role logs in with it.
    let login = std::process::Command::new("psql")
        .args(["-X", "-At", "-h", "127.0.0.1", "-p", &pg.port().to_string()])
        .args([
            "-U",
            "pw_app",
            "-d",
            "postgres",
            "-c",
            "SELECT current_user",
        ])
        .env("PGPASSWORD", password)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&login.stdout).trim(),
        "pw_app",
        "{login:?}"
    );

    // State: sealed. Server log: only a SCRAM verifier went over the wire.
    for (path, bytes) in env.state_files() {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(password),
            "{} holds the password",
            path.display()
        );
    }
    let log = std::fs::read_to_string(pg.log_path()).unwrap();
    assert!(
        log.contains("CREATE ROLE \"pw_app\""),
        "statements are logged"
    );
    assert!(!log.contains(password), "the server log holds the password");

    // Nor does an error about the role.
    pg.psql("postgres", "DROP ROLE pw_app").unwrap();
    env.config("role_password", "changed-password-1");
    let out = env.run(&["up", "--yes"]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !all.contains("changed-password-1") && !all.contains(password),
        "{all}"
    );
    env.ok(&["destroy", "--yes"]);
}

#[test]
fn hostile_names_round_trip_as_names() {
    let pg = shared();
    let env = granted(&pg);
    let quote_role = r#"hn x"; DROP DATABASE postgres; --"#;
    let unicode_db = "hn-Straße 数据库 'q'";
    let long_schema: String = format!("hn_{}", "é".repeat(30)); // 63 bytes
    assert_eq!(long_schema.len(), 63);
    declare(
        &env,
        &json!([
            role("r", json!({"name": quote_role})),
            {"type": "postgresql:Database", "name": "db",
             "inputs": {"name": unicode_db, "owner": {"$output": ["r", "name"]}}},
            {"type": "postgresql:Schema", "name": "s",
             "inputs": {"name": long_schema, "database": {"$output": ["db", "name"]}, "owner": {"$output": ["r", "name"]}}},
            {"type": "postgresql:Grant", "name": "g",
             "inputs": {"role": {"$output": ["r", "name"]}, "database": {"$output": ["db", "name"]},
                        "object_type": "database", "privileges": ["CONNECT", "TEMP"]}},
        ]),
    );
    env.ok(&["up", "--yes"]);
    let lit = |s: &str| format!("'{}'", s.replace('\'', "''"));
    assert_eq!(
        q(
            &pg,
            "postgres",
            &format!(
                "SELECT count(*) FROM pg_roles WHERE rolname = {}",
                lit(quote_role)
            )
        ),
        "1"
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT count(*) FROM pg_database WHERE datname = 'postgres'"
        ),
        "1"
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            &format!(
                "SELECT pg_get_userbyid(datdba) = {} FROM pg_database WHERE datname = {}",
                lit(quote_role),
                lit(unicode_db)
            )
        ),
        "t"
    );
    assert_eq!(
        q(
            &pg,
            unicode_db,
            &format!(
                "SELECT count(*) FROM pg_namespace WHERE nspname = {}",
                lit(&long_schema)
            )
        ),
        "1"
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            &format!(
                "SELECT has_database_privilege({}, {}, 'TEMPORARY')",
                lit(quote_role),
                lit(unicode_db)
            )
        ),
        "t"
    );
    env.ok(&["preview", "--expect-no-changes"]);
    env.ok(&["destroy", "--yes"]);
    assert_eq!(
        q(
            &pg,
            "postgres",
            &format!(
                "SELECT count(*) FROM pg_roles WHERE rolname = {}",
                lit(quote_role)
            )
        ),
        "0"
    );

    // A name PostgreSQL would cut short is refused before anything is done.
    let too_long = format!("{long_schema}x");
    declare(&env, &json!([role("r", json!({"name": too_long}))]));
    let err = env.fails(&["preview"]);
    assert!(
        err.contains("64 bytes") && err.contains("at most 63"),
        "{err}"
    );
}
