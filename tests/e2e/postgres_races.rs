//! Catalog writes that race: many grants and default privileges on one database, applied at
//! `--parallel 64`, where PostgreSQL fails concurrent updates of one catalog row with "tuple
//! concurrently updated" unless the provider serializes them; and `ALL` privileges, however
//! spelt, that never show as drift.

use plinth_test_postgres::Postgres;
use serde_json::{Value as Json, json};

use crate::postgres::{count_line, declare, granted, q};

const ROLES: usize = 40;

/// Five resources per role, 200 in all, every one writing a catalog row the others write too:
/// the database's ACL, the schema's, the tables', and two rows of default privileges.
fn races(all: bool) -> Json {
    let privileges = |all_of: Json, some: Json| if all { all_of } else { some };
    let mut resources = Vec::new();
    for i in 0..ROLES {
        let role = format!("race_r{i}");
        resources.push(json!({"type": "postgresql:Grant", "name": format!("db{i}"),
            "inputs": {"role": role, "database": "race_db", "object_type": "database",
                       "privileges": privileges(json!(["ALL"]), json!(["CONNECT"]))}}));
        resources.push(
            json!({"type": "postgresql:Grant", "name": format!("schema{i}"),
            "inputs": {"role": role, "database": "race_db", "object_type": "schema",
                       "schema": "app",
                       "privileges": privileges(json!(["all privileges"]), json!(["USAGE"]))}}),
        );
        resources.push(json!({"type": "postgresql:Grant", "name": format!("tables{i}"),
            "inputs": {"role": role, "database": "race_db", "object_type": "table",
                       "schema": "app",
                       "privileges": privileges(
                           json!(["TRIGGER", "select", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES"]),
                           json!(["SELECT"]))}}));
        resources.push(
            json!({"type": "postgresql:DefaultPrivileges", "name": format!("future_tables{i}"),
            "inputs": {"role": role, "database": "race_db", "owner": "race_owner",
                       "schema": "app", "object_type": "table",
                       "privileges": privileges(json!(["ALL"]), json!(["SELECT", "INSERT"]))}}),
        );
        resources.push(
            json!({"type": "postgresql:DefaultPrivileges", "name": format!("future_sequences{i}"),
            "inputs": {"role": role, "database": "race_db", "owner": "race_owner",
                       "object_type": "sequence",
                       "privileges": privileges(json!(["all"]), json!(["USAGE"]))}}),
        );
    }
    Json::Array(resources)
}

/// How many of the race roles hold `what` (a boolean SQL expression of `r`, the role's name).
fn holders(pg: &Postgres, what: &str) -> String {
    q(
        pg,
        "race_db",
        &format!(
            "SELECT count(*) FROM (SELECT rolname AS r FROM pg_roles WHERE rolname LIKE 'race\\_r%') x \
             WHERE {what}"
        ),
    )
}

/// The proof for "tuple concurrently updated" (the anchor's issue 178): ten runs of 200
/// racing catalog writes at `--parallel 64`, every one of them succeeding, every effect in the
/// catalogs; then `ALL` read back is no drift, and destroy revokes all of it, racing too.
#[test]
fn two_hundred_grants_on_one_database_never_race_at_parallel_64() {
    // A server of its own: 64 connections at once, beside the other tests' server.
    let pg = Postgres::start().unwrap();
    pg.psql("postgres", "CREATE ROLE race_owner").unwrap();
    for i in 0..ROLES {
        pg.psql("postgres", &format!("CREATE ROLE race_r{i}"))
            .unwrap();
    }
    pg.create_database("race_db").unwrap();
    pg.psql(
        "race_db",
        "CREATE SCHEMA app; CREATE TABLE app.t1 (x int); CREATE TABLE app.t2 (x int); \
         CREATE VIEW app.v AS SELECT 1 AS one",
    )
    .unwrap();
    let env = granted(&pg);

    for run in 0..10 {
        // Alternate: every run after the first updates all 200 in place, racing again.
        let all = run % 2 == 1;
        declare(&env, &races(all));
        let out = env.run(&["up", "--yes", "--parallel", "64"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "run {run} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        let expected = if run == 0 {
            "200 created"
        } else {
            "200 updated"
        };
        assert!(
            count_line(&stdout).contains(expected),
            "run {run}: {stdout}"
        );
        let n = ROLES.to_string();
        let (db, schema, table, later) = if all {
            (
                "has_database_privilege(r, 'race_db', 'CONNECT, CREATE, TEMPORARY')",
                "has_schema_privilege(r, 'app', 'USAGE') AND has_schema_privilege(r, 'app', 'CREATE')",
                "has_table_privilege(r, 'app.t1', 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER') \
                 AND has_table_privilege(r, 'app.v', 'TRIGGER')",
                "EXISTS (SELECT 1 FROM pg_default_acl d, aclexplode(d.defaclacl) a \
                 WHERE a.grantee = r::regrole AND d.defaclobjtype = 'r' AND a.privilege_type = 'TRUNCATE')",
            )
        } else {
            (
                "has_database_privilege(r, 'race_db', 'CONNECT') AND NOT has_database_privilege(r, 'race_db', 'CREATE')",
                "has_schema_privilege(r, 'app', 'USAGE') AND NOT has_schema_privilege(r, 'app', 'CREATE')",
                "has_table_privilege(r, 'app.t2', 'SELECT') AND NOT has_table_privilege(r, 'app.t2', 'INSERT')",
                "EXISTS (SELECT 1 FROM pg_default_acl d, aclexplode(d.defaclacl) a \
                 WHERE a.grantee = r::regrole AND d.defaclobjtype = 'r' AND a.privilege_type = 'INSERT') \
                 AND NOT EXISTS (SELECT 1 FROM pg_default_acl d, aclexplode(d.defaclacl) a \
                 WHERE a.grantee = r::regrole AND a.privilege_type = 'TRUNCATE')",
            )
        };
        for what in [db, schema, table, later] {
            assert_eq!(holders(&pg, what), n, "run {run}: {what}");
        }
    }

    // The last run granted `ALL` in four spellings: none of it is drift.
    env.ok(&["refresh", "--expect-no-changes"]);
    env.ok(&["preview", "--expect-no-changes"]);

    let out = env.ok(&["destroy", "--yes", "--parallel", "64"]);
    assert!(count_line(&out).contains("200 deleted"), "{out}");
    assert_eq!(
        holders(
            &pg,
            "has_database_privilege(r, 'race_db', 'CONNECT') AND NOT has_database_privilege('public', 'race_db', 'CONNECT') \
             OR has_schema_privilege(r, 'app', 'USAGE') OR has_table_privilege(r, 'app.t1', 'SELECT')"
        ),
        "0"
    );
    assert_eq!(
        q(&pg, "race_db", "SELECT count(*) FROM pg_default_acl"),
        "0"
    );
}

/// Every kind of object granted `ALL` (and defaults of every kind), in PostgreSQL 15's
/// privilege set: refresh reads nothing different and preview plans nothing.
#[test]
fn all_privileges_are_not_drift() {
    let pg = crate::postgres::shared();
    pg.psql("postgres", "CREATE ROLE ad_role").unwrap();
    pg.psql("postgres", "CREATE ROLE ad_owner").unwrap();
    pg.create_database("ad_db").unwrap();
    pg.psql(
        "ad_db",
        "CREATE SCHEMA s; CREATE TABLE s.t (id serial); \
         CREATE FUNCTION s.f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    )
    .unwrap();
    let env = granted(&pg);
    let grant = |name: &str, object_type: &str, schema: Option<&str>, privileges: Json| {
        let mut inputs = json!({"role": "ad_role", "database": "ad_db",
                                "object_type": object_type, "privileges": privileges});
        if let Some(schema) = schema {
            inputs["schema"] = json!(schema);
        }
        json!({"type": "postgresql:Grant", "name": name, "inputs": inputs})
    };
    let defaults = |name: &str, object_type: &str, schema: Option<&str>| {
        let mut inputs = json!({"role": "ad_role", "database": "ad_db", "owner": "ad_owner",
                                "object_type": object_type, "privileges": ["ALL"]});
        if let Some(schema) = schema {
            inputs["schema"] = json!(schema);
        }
        json!({"type": "postgresql:DefaultPrivileges", "name": name, "inputs": inputs})
    };
    let resources = json!([
        grant("db", "database", None, json!(["ALL"])),
        grant("schema", "schema", Some("s"), json!(["ALL PRIVILEGES"])),
        grant("tables", "table", Some("s"), json!(["all"])),
        grant("sequences", "sequence", Some("s"), json!(["ALL"])),
        grant("functions", "function", Some("s"), json!(["ALL"])),
        defaults("d_tables", "table", Some("s")),
        defaults("d_sequences", "sequence", None),
        defaults("d_functions", "function", None),
        defaults("d_types", "type", None),
        defaults("d_schemas", "schema", None),
    ]);
    declare(&env, &resources);
    env.ok(&["up", "--yes"]);
    assert_eq!(
        q(
            &pg,
            "ad_db",
            "SELECT has_table_privilege('ad_role', 's.t', 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER'), \
             has_sequence_privilege('ad_role', 's.t_id_seq', 'USAGE, SELECT, UPDATE'), \
             has_function_privilege('ad_role', 's.f()', 'EXECUTE'), \
             has_database_privilege('ad_role', 'ad_db', 'CREATE, CONNECT, TEMPORARY')"
        ),
        "t|t|t|t"
    );
    env.ok(&["refresh", "--expect-no-changes"]);
    env.ok(&["preview", "--expect-no-changes"]);
    // Taken away out of band, it is drift, and `up` grants it again.
    pg.psql("ad_db", "REVOKE TRUNCATE ON s.t FROM ad_role")
        .unwrap();
    env.fails(&["refresh", "--expect-no-changes"]);
    env.ok(&["up", "--yes", "--refresh"]);
    assert_eq!(
        q(
            &pg,
            "ad_db",
            "SELECT has_table_privilege('ad_role', 's.t', 'TRUNCATE')"
        ),
        "t"
    );
    env.ok(&["preview", "--expect-no-changes"]);

    // A membership and defaults made by hand are imported by id, as they are.
    pg.psql(
        "postgres",
        "CREATE ROLE ad_other; GRANT ad_owner TO ad_other",
    )
    .unwrap();
    pg.psql(
        "ad_db",
        "ALTER DEFAULT PRIVILEGES FOR ROLE ad_owner GRANT SELECT, UPDATE ON TABLES TO ad_other",
    )
    .unwrap();
    let mut all = resources;
    all.as_array_mut().unwrap().extend([
        json!({"type": "postgresql:GrantRole", "name": "im_member",
               "import": "[\"ad_other\", \"ad_owner\"]",
               "inputs": {"role": "ad_other", "grant_role": "ad_owner"}}),
        json!({"type": "postgresql:DefaultPrivileges", "name": "im_defaults",
               "import": "[\"ad_other\", \"ad_db\", \"ad_owner\", null, \"table\"]",
               "inputs": {"role": "ad_other", "database": "ad_db", "owner": "ad_owner",
                          "object_type": "table", "privileges": ["UPDATE", "SELECT"]}}),
    ]);
    declare(&env, &all);
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("2 imported"), "{out}");
    env.ok(&["refresh", "--expect-no-changes"]);
    env.ok(&["preview", "--expect-no-changes"]);

    env.ok(&["destroy", "--yes"]);
    assert_eq!(q(&pg, "ad_db", "SELECT count(*) FROM pg_default_acl"), "0");
    pg.psql("postgres", "DROP DATABASE ad_db").unwrap();
    pg.psql(
        "postgres",
        "DROP ROLE ad_other; DROP ROLE ad_role; DROP ROLE ad_owner",
    )
    .unwrap();
}
