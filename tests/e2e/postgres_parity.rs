//! The PostgreSQL types the anchor provider has beside the basics, against real servers:
//! publications, subscriptions and replication slots (a publisher of the test's own, with
//! `wal_level = logical`), functions, foreign servers, user mappings and the listing
//! functions. Each type: create, update in place, replace, drift made with psql found by
//! refresh and put back by up, import by id, destroy. Effects are checked in the catalogs.

use plinth_test_postgres::Postgres;
use serde_json::{Value as Json, json};

use crate::postgres::{count_line, declare, granted, q, shared};
use crate::support::Env;

/// The resource `name` as the state has it.
fn recorded(env: &Env, name: &str) -> Json {
    let suffix = format!("::{name}");
    env.export()["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with(&suffix))
        .cloned()
        .unwrap_or_else(|| panic!("no resource `{name}` in the state"))
}

/// Whether `out` has a step line of the resource `name` that says `verb`.
fn stepped(out: &str, name: &str, verb: &str) -> bool {
    out.lines()
        .any(|l| l.split_whitespace().any(|w| w == name) && l.contains(verb))
}

/// A server with `wal_level = logical`, for publications and logical slots.
fn publisher() -> Postgres {
    let pg = Postgres::start().unwrap();
    pg.psql("postgres", "ALTER SYSTEM SET wal_level = logical")
        .unwrap();
    pg.restart().unwrap();
    assert_eq!(q(&pg, "postgres", "SHOW wal_level"), "logical");
    pg
}

#[test]
fn publications_and_replication_slots_live_on_the_publisher() {
    let pg = publisher();
    pg.create_database("pub_db").unwrap();
    pg.psql(
        "pub_db",
        "CREATE TABLE t1 (id int PRIMARY KEY); CREATE TABLE t2 (id int PRIMARY KEY); \
         CREATE SCHEMA s; CREATE TABLE s.x (id int PRIMARY KEY)",
    )
    .unwrap();
    let env = granted(&pg);
    let spec = |publication: Json, plugin: &str, physical: &str| {
        json!([
            {"type": "postgresql:Publication", "name": "pub", "inputs": publication},
            {"type": "postgresql:ReplicationSlot", "name": "slot",
             "inputs": {"name": "pb_slot", "plugin": plugin, "database": "pub_db"}},
            {"type": "postgresql:PhysicalReplicationSlot", "name": "phys",
             "inputs": {"name": physical}},
        ])
    };

    // Create.
    declare(
        &env,
        &spec(
            json!({"name": "pb_pub", "database": "pub_db", "tables": ["t1", "s.x"],
                   "publish_param": ["insert", "update"]}),
            "test_decoding",
            "pb_phys",
        ),
    );
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("3 created"), "{out}");
    let pub_oid = q(
        &pg,
        "pub_db",
        "SELECT oid FROM pg_publication WHERE pubname = 'pb_pub'",
    );
    assert_eq!(
        q(
            &pg,
            "pub_db",
            "SELECT pubinsert, pubupdate, pubdelete, pubtruncate, pubviaroot, \
             (SELECT string_agg(schemaname || '.' || tablename, ',' ORDER BY 1) FROM pg_publication_tables WHERE pubname = 'pb_pub') \
             FROM pg_publication WHERE pubname = 'pb_pub'"
        ),
        "t|t|f|f|f|public.t1,s.x"
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT slot_name, plugin, slot_type, database FROM pg_replication_slots ORDER BY 1"
        ),
        "pb_phys||physical|\npb_slot|test_decoding|logical|pub_db"
    );
    env.ok(&["preview", "--expect-no-changes"]);
    env.ok(&["refresh", "--expect-no-changes"]);

    // Update in place: renamed, other tables, every operation, via the partition root.
    let updated = json!({"name": "pb_pub2", "database": "pub_db", "tables": ["public.t2", "t1"],
                         "publish_via_partition_root_param": true});
    declare(&env, &spec(updated.clone(), "test_decoding", "pb_phys"));
    let out = env.ok(&["up", "--yes"]);
    assert!(stepped(&out, "pub", "updated"), "{out}");
    assert_eq!(
        q(
            &pg,
            "pub_db",
            "SELECT oid, pubinsert, pubupdate, pubdelete, pubtruncate, pubviaroot, \
             (SELECT string_agg(schemaname || '.' || tablename, ',' ORDER BY 1) FROM pg_publication_tables WHERE pubname = 'pb_pub2') \
             FROM pg_publication WHERE pubname = 'pb_pub2'"
        ),
        format!("{pub_oid}|t|t|t|t|t|public.t1,public.t2")
    );
    env.ok(&["preview", "--expect-no-changes"]);

    // Replace: a slot cannot change its plugin or its name.
    declare(&env, &spec(updated.clone(), "pgoutput", "pb_phys2"));
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("2 replaced"), "{out}");
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT slot_name, coalesce(plugin, '-') FROM pg_replication_slots ORDER BY 1"
        ),
        "pb_phys2|-\npb_slot|pgoutput"
    );

    // Drift made out of band: found by refresh, put back by up.
    pg.psql("pub_db", "ALTER PUBLICATION pb_pub2 DROP TABLE t2; ALTER PUBLICATION pb_pub2 SET (publish = 'insert')")
        .unwrap();
    pg.psql("postgres", "SELECT pg_drop_replication_slot('pb_phys2')")
        .unwrap();
    env.fails(&["refresh", "--expect-no-changes"]);
    let out = env.ok(&["refresh", "--yes"]);
    assert!(
        out.contains("tables") || out.contains("publish_param"),
        "{out}"
    );
    assert_eq!(
        recorded(&env, "pub")["inputs"]["tables"],
        json!(["public.t1"])
    );
    env.ok(&["up", "--yes"]);
    assert_eq!(
        q(
            &pg,
            "pub_db",
            "SELECT pubdelete, (SELECT count(*) FROM pg_publication_tables WHERE pubname = 'pb_pub2') \
             FROM pg_publication WHERE pubname = 'pb_pub2'"
        ),
        "t|2"
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'pb_phys2'"
        ),
        "1"
    );
    env.ok(&["preview", "--expect-no-changes"]);

    // Import by id: objects made by hand come under management as they are.
    pg.psql(
        "pub_db",
        "CREATE PUBLICATION pb_im FOR TABLE s.x WITH (publish = 'insert, delete')",
    )
    .unwrap();
    pg.psql(
        "pub_db",
        "SELECT pg_create_logical_replication_slot('pb_im_slot', 'test_decoding')",
    )
    .unwrap();
    pg.psql(
        "postgres",
        "SELECT pg_create_physical_replication_slot('pb_im_phys')",
    )
    .unwrap();
    let imports = json!([
        {"type": "postgresql:Publication", "name": "im_pub", "import": "pub_db/pb_im",
         "inputs": {"name": "pb_im", "database": "pub_db", "tables": ["s.x"],
                    "publish_param": ["delete", "insert"]}},
        {"type": "postgresql:ReplicationSlot", "name": "im_slot", "import": "pb_im_slot",
         "inputs": {"name": "pb_im_slot", "plugin": "test_decoding", "database": "pub_db"}},
        {"type": "postgresql:PhysicalReplicationSlot", "name": "im_phys", "import": "pb_im_phys",
         "inputs": {"name": "pb_im_phys"}},
    ]);
    let mut all = spec(updated, "pgoutput", "pb_phys2");
    all.as_array_mut()
        .unwrap()
        .extend(imports.as_array().unwrap().iter().cloned());
    declare(&env, &all);
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("3 imported"), "{out}");
    let im_oid = q(
        &pg,
        "pub_db",
        "SELECT oid FROM pg_publication WHERE pubname = 'pb_im'",
    );
    assert!(
        recorded(&env, "im_pub")["id"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/{im_oid}"))
    );
    env.ok(&["preview", "--expect-no-changes"]);

    // Destroy leaves none of it.
    env.ok(&["destroy", "--yes"]);
    assert_eq!(q(&pg, "pub_db", "SELECT count(*) FROM pg_publication"), "0");
    assert_eq!(
        q(&pg, "postgres", "SELECT count(*) FROM pg_replication_slots"),
        "0"
    );
}

#[test]
fn subscriptions_replicate_from_a_publisher() {
    let publisher = publisher();
    publisher.create_database("sp_pub").unwrap();
    publisher
        .psql(
            "sp_pub",
            "CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int PRIMARY KEY); \
             INSERT INTO a VALUES (1), (2); CREATE PUBLICATION sp_a FOR TABLE a; \
             CREATE PUBLICATION sp_b FOR TABLE b; CREATE PUBLICATION sp_im FOR TABLE b",
        )
        .unwrap();
    let pg = shared();
    pg.create_database("sp_sub").unwrap();
    pg.psql(
        "sp_sub",
        "CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int PRIMARY KEY)",
    )
    .unwrap();
    let env = granted(&pg);
    let conninfo = format!(
        "host=127.0.0.1 port={} dbname=sp_pub user=postgres password={}",
        publisher.port(),
        publisher.password()
    );
    env.ok(&["config", "set", "conninfo", &conninfo, "--secret"]);
    let subscription = |publications: Json, slot: Option<&str>| {
        let mut inputs = json!({"name": "sp_s", "database": "sp_sub",
                                "conninfo": {"$secret": "conninfo"}, "publications": publications});
        if let Some(slot) = slot {
            inputs["slot_name"] = json!(slot);
        }
        json!({"type": "postgresql:Subscription", "name": "sub", "inputs": inputs})
    };
    let slots = || {
        q(
            &publisher,
            "postgres",
            // Not the slots of tables being copied, which come and go on their own.
            "SELECT coalesce(string_agg(slot_name, ',' ORDER BY 1), '') FROM pg_replication_slots \
             WHERE slot_name NOT LIKE 'pg\\_%'",
        )
    };

    // Create: the subscription exists, and its slot on the publisher.
    declare(&env, &json!([subscription(json!(["sp_a"]), None)]));
    env.ok(&["up", "--yes"]);
    assert_eq!(
        q(
            &pg,
            "sp_sub",
            "SELECT subenabled, array_to_string(subpublications, ','), subslotname FROM pg_subscription WHERE subname = 'sp_s'"
        ),
        "t|sp_a|sp_s"
    );
    assert_eq!(slots(), "sp_s");
    env.ok(&["preview", "--expect-no-changes"]);
    // The connection, with its password, is sealed in the state.
    for (path, bytes) in env.state_files() {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(publisher.password()),
            "{} holds the publisher's password",
            path.display()
        );
    }

    // Update in place: another publication.
    declare(&env, &json!([subscription(json!(["sp_a", "sp_b"]), None)]));
    let out = env.ok(&["up", "--yes"]);
    assert!(stepped(&out, "sub", "updated"), "{out}");
    assert_eq!(
        q(
            &pg,
            "sp_sub",
            "SELECT array_to_string(subpublications, ',') FROM pg_subscription WHERE subname = 'sp_s'"
        ),
        "sp_a,sp_b"
    );

    // Drift: publications changed by hand.
    pg.psql(
        "sp_sub",
        "ALTER SUBSCRIPTION sp_s SET PUBLICATION sp_b WITH (refresh = false)",
    )
    .unwrap();
    env.fails(&["refresh", "--expect-no-changes"]);
    env.ok(&["up", "--yes", "--refresh"]);
    assert_eq!(
        q(
            &pg,
            "sp_sub",
            "SELECT array_to_string(subpublications, ',') FROM pg_subscription WHERE subname = 'sp_s'"
        ),
        "sp_a,sp_b"
    );
    env.ok(&["preview", "--expect-no-changes"]);

    // Replace: another slot.
    declare(
        &env,
        &json!([subscription(json!(["sp_a", "sp_b"]), Some("sp_slot2"))]),
    );
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 replaced"), "{out}");
    assert_eq!(slots(), "sp_slot2");

    // Import one made by hand.
    pg.psql(
        "sp_sub",
        &format!(
            "CREATE SUBSCRIPTION sp_im CONNECTION '{conninfo}' PUBLICATION sp_im WITH (copy_data = false)"
        ),
    )
    .unwrap();
    declare(
        &env,
        &json!([
            subscription(json!(["sp_a", "sp_b"]), Some("sp_slot2")),
            {"type": "postgresql:Subscription", "name": "im", "import": "sp_sub/sp_im",
             "inputs": {"name": "sp_im", "database": "sp_sub", "conninfo": {"$secret": "conninfo"},
                        "publications": ["sp_im"]}},
        ]),
    );
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 imported"), "{out}");
    env.ok(&["preview", "--expect-no-changes"]);

    // Destroy drops the subscriptions and their slots on the publisher.
    env.ok(&["destroy", "--yes"]);
    assert_eq!(
        q(&pg, "sp_sub", "SELECT count(*) FROM pg_subscription"),
        "0"
    );
    assert_eq!(slots(), "");
    pg.psql("postgres", "DROP DATABASE sp_sub").unwrap();
}

#[test]
fn functions_foreign_servers_and_user_mappings() {
    let pg = shared();
    pg.create_database("fn_db").unwrap();
    pg.psql(
        "fn_db",
        "CREATE SCHEMA app; CREATE TABLE app.orders (id int)",
    )
    .unwrap();
    let env = granted(&pg);
    let spec = |function: Json, server_options: Json, mapping_password: &str, server_type: &str| {
        json!([
            {"type": "postgresql:Extension", "name": "fdw",
             "inputs": {"name": "postgres_fdw", "database": "fn_db"}},
            {"type": "postgresql:Role", "name": "user", "inputs": {"name": "fn_user"}},
            {"type": "postgresql:Function", "name": "add", "inputs": function},
            {"type": "postgresql:Server", "name": "srv",
             "inputs": {"server_name": "fn_srv", "fdw_name": {"$output": ["fdw", "name"]},
                        "database": "fn_db", "options": server_options, "server_version": "15",
                        "server_owner": {"$output": ["user", "name"]}}},
            {"type": "postgresql:Server", "name": "srv_b",
             "inputs": {"server_name": "fn_srv_b", "fdw_name": {"$output": ["fdw", "name"]},
                        "database": "fn_db", "server_type": server_type}},
            {"type": "postgresql:UserMapping", "name": "mapping",
             "inputs": {"user_name": {"$output": ["user", "name"]},
                        "server_name": {"$output": ["srv", "server_name"]}, "database": "fn_db",
                        "options": {"user": "fdw_user"}, "password": mapping_password}},
        ])
    };
    let add = |body: &str, volatility: &str, args: Json| {
        json!({"name": "fn_add", "database": "fn_db", "schema": "app", "args": args,
               "returns": "integer", "language": "sql", "body": body, "volatility": volatility})
    };
    let two_args = json!([{"name": "a", "type": "integer"},
                          {"name": "b", "type": "int4", "default": "1"}]);
    let hostile_password = "pw'); DROP TABLE app.orders; --";

    // Create.
    declare(
        &env,
        &spec(
            add("SELECT a + b", "immutable", two_args.clone()),
            json!({"host": "10.0.0.1", "dbname": "inventory"}),
            hostile_password,
            "a",
        ),
    );
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("6 created"), "{out}");
    assert_eq!(
        q(&pg, "fn_db", "SELECT app.fn_add(2), app.fn_add(2, 5)"),
        "3|7"
    );
    let fn_oid = q(
        &pg,
        "fn_db",
        "SELECT 'app.fn_add(int, int)'::regprocedure::oid",
    );
    assert_eq!(
        q(
            &pg,
            "fn_db",
            "SELECT provolatile, srvversion, pg_get_userbyid(srvowner), array_to_string(srvoptions, ';') \
             FROM pg_proc, pg_foreign_server WHERE pg_proc.oid = 'app.fn_add(int,int)'::regprocedure AND srvname = 'fn_srv'"
        ),
        "i|15|fn_user|dbname=inventory;host=10.0.0.1"
    );
    assert_eq!(
        q(
            &pg,
            "fn_db",
            "SELECT array_to_string(umoptions, ';') FROM pg_user_mappings WHERE srvname = 'fn_srv' AND usename = 'fn_user'"
        ),
        format!("password={hostile_password};user=fdw_user")
    );
    assert_eq!(q(&pg, "fn_db", "SELECT count(*) FROM app.orders"), "0");
    for (path, bytes) in env.state_files() {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(hostile_password),
            "{} holds the mapping's password",
            path.display()
        );
    }
    let preview = env.run(&["preview", "--expect-no-changes"]);
    assert!(
        preview.status.success(),
        "{}\nrecorded: {}",
        String::from_utf8_lossy(&preview.stdout),
        recorded(&env, "srv")
    );
    env.ok(&["refresh", "--expect-no-changes"]);

    // Update in place: the body and volatility (same OID), the server's options, the password.
    declare(
        &env,
        &spec(
            add("SELECT a + b + 100", "STABLE", two_args.clone()),
            json!({"host": "10.0.0.2", "port": "5433"}),
            "second",
            "a",
        ),
    );
    let out = env.ok(&["up", "--yes"]);
    for name in ["add", "srv", "mapping"] {
        assert!(stepped(&out, name, "updated"), "{name}: {out}");
    }
    assert_eq!(
        q(
            &pg,
            "fn_db",
            "SELECT app.fn_add(1), p.oid, provolatile, array_to_string(srvoptions, ';') \
             FROM pg_proc p, pg_foreign_server WHERE p.oid = 'app.fn_add(int,int)'::regprocedure AND srvname = 'fn_srv'"
        ),
        format!("102|{fn_oid}|s|host=10.0.0.2;port=5433")
    );
    assert_eq!(
        q(
            &pg,
            "fn_db",
            "SELECT array_to_string(umoptions, ';') FROM pg_user_mappings WHERE srvname = 'fn_srv'"
        ),
        "password=second;user=fdw_user"
    );
    env.ok(&["preview", "--expect-no-changes"]);

    // Replace: another signature is another function; a server's type is fixed.
    let three_args = json!([{"name": "a", "type": "integer"}, {"name": "b", "type": "integer"},
                            {"name": "c", "type": "integer"}]);
    declare(
        &env,
        &spec(
            add("SELECT a + b + c", "STABLE", three_args.clone()),
            json!({"host": "10.0.0.2", "port": "5433"}),
            "second",
            "b",
        ),
    );
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("2 replaced"), "{out}");
    assert_eq!(
        q(
            &pg,
            "fn_db",
            "SELECT app.fn_add(1, 2, 3), to_regprocedure('app.fn_add(int,int)') IS NULL, \
             (SELECT srvtype FROM pg_foreign_server WHERE srvname = 'fn_srv_b')"
        ),
        "6|t|b"
    );

    // Drift made by hand: found by refresh, put back by up.
    pg.psql(
        "fn_db",
        "CREATE OR REPLACE FUNCTION app.fn_add(a int, b int, c int) RETURNS int LANGUAGE sql STABLE AS 'SELECT 0'; \
         ALTER SERVER fn_srv OPTIONS (SET host 'elsewhere'); \
         ALTER USER MAPPING FOR fn_user SERVER fn_srv OPTIONS (SET password 'changed')",
    )
    .unwrap();
    env.fails(&["refresh", "--expect-no-changes"]);
    env.ok(&["up", "--yes", "--refresh"]);
    assert_eq!(
        q(
            &pg,
            "fn_db",
            "SELECT app.fn_add(1, 2, 3), (SELECT array_to_string(srvoptions, ';') FROM pg_foreign_server WHERE srvname = 'fn_srv'), \
             (SELECT array_to_string(umoptions, ';') FROM pg_user_mappings WHERE srvname = 'fn_srv')"
        ),
        "6|host=10.0.0.2;port=5433|password=second;user=fdw_user"
    );
    env.ok(&["preview", "--expect-no-changes"]);

    // Import by id.
    pg.psql(
        "fn_db",
        "CREATE FUNCTION app.fn_im(x text) RETURNS text LANGUAGE plpgsql AS $$BEGIN RETURN x; END$$; \
         CREATE SERVER fn_im_srv FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host 'h'); \
         CREATE USER MAPPING FOR PUBLIC SERVER fn_im_srv OPTIONS (user 'u')",
    )
    .unwrap();
    let mut all = spec(
        add("SELECT a + b + c", "STABLE", three_args),
        json!({"host": "10.0.0.2", "port": "5433"}),
        "second",
        "b",
    );
    all.as_array_mut().unwrap().extend([
        json!({"type": "postgresql:Function", "name": "im_fn", "import": "fn_db/app.fn_im(text)",
               "inputs": {"name": "fn_im", "database": "fn_db", "schema": "app",
                          "args": [{"name": "x", "type": "text"}], "returns": "text",
                          "body": "BEGIN RETURN x; END"}}),
        json!({"type": "postgresql:Server", "name": "im_srv", "import": "fn_db/fn_im_srv",
               "inputs": {"server_name": "fn_im_srv", "fdw_name": "postgres_fdw", "database": "fn_db",
                          "options": {"host": "h"}}}),
        // The server by its output: a mapping named by a literal would not depend on it, and
        // `destroy` could drop the server while the mapping still stood.
        json!({"type": "postgresql:UserMapping", "name": "im_map",
               "import": "[\"fn_db\", \"fn_im_srv\", \"public\"]",
               "inputs": {"user_name": "public", "database": "fn_db", "options": {"user": "u"},
                          "server_name": {"$output": ["im_srv", "server_name"]}}}),
    ]);
    declare(&env, &all);
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("3 imported"), "{out}");
    env.ok(&["preview", "--expect-no-changes"]);

    // Destroy leaves none of it.
    env.ok(&["destroy", "--yes"]);
    assert_eq!(
        q(
            &pg,
            "fn_db",
            "SELECT (SELECT count(*) FROM pg_proc WHERE proname LIKE 'fn\\_%'), \
             (SELECT count(*) FROM pg_foreign_server), (SELECT count(*) FROM pg_user_mappings), \
             (SELECT count(*) FROM pg_extension WHERE extname = 'postgres_fdw')"
        ),
        "0|0|0|0"
    );
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT count(*) FROM pg_roles WHERE rolname = 'fn_user'"
        ),
        "0"
    );
    pg.psql("postgres", "DROP DATABASE fn_db").unwrap();
}

#[test]
fn listing_functions_filter_by_patterns() {
    let pg = shared();
    pg.create_database("ls_db").unwrap();
    pg.psql(
        "ls_db",
        "CREATE SCHEMA app; CREATE SCHEMA apple; CREATE SCHEMA other; \
         CREATE TABLE app.orders (id serial); CREATE TABLE app.orders_old (id int); \
         CREATE TABLE app.customers (id int); CREATE VIEW app.order_view AS SELECT 1 AS one; \
         CREATE TABLE other.orders (id int); CREATE SEQUENCE app.invoice_seq AS integer; \
         CREATE SEQUENCE other.s",
    )
    .unwrap();
    let env = granted(&pg);
    let invoke = |name: &str, token: &str, args: Json| json!({"invoke": format!("postgresql:{token}"), "name": name, "args": args});
    declare(
        &env,
        &json!([
            invoke(
                "schemas",
                "getSchemas",
                json!({"database": "ls_db", "regex_pattern": "^app"})
            ),
            invoke(
                "all_schemas",
                "getSchemas",
                json!({"database": "ls_db", "include_system_schemas": true,
                          "like_any_patterns": ["pg\\_catalog", "information%"]})
            ),
            invoke(
                "tables",
                "getTables",
                json!({"database": "ls_db", "schemas": ["app"], "table_types": ["BASE TABLE"],
                          "like_any_patterns": ["ord%", "cust%"], "not_like_all_patterns": ["%\\_old"]})
            ),
            invoke(
                "views",
                "getTables",
                json!({"database": "ls_db", "like_all_patterns": ["%order%", "%view"]})
            ),
            invoke(
                "sequences",
                "getSequences",
                json!({"database": "ls_db", "schemas": ["app"], "like_any_patterns": ["%"]})
            ),
            // A hostile pattern is a pattern.
            invoke(
                "hostile",
                "getSchemas",
                json!({"database": "ls_db", "like_any_patterns": ["x'); DROP DATABASE ls_db; --"]})
            ),
        ]),
    );
    env.ok(&["up", "--yes"]);
    let outputs: Json = serde_json::from_str(&env.ok(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["schemas"], json!({"schemas": ["app", "apple"]}));
    assert_eq!(
        outputs["all_schemas"],
        json!({"schemas": ["information_schema", "pg_catalog"]})
    );
    assert_eq!(
        outputs["tables"],
        json!({"tables": [
            {"object_name": "customers", "schema_name": "app", "table_type": "BASE TABLE"},
            {"object_name": "orders", "schema_name": "app", "table_type": "BASE TABLE"},
        ]})
    );
    assert_eq!(
        outputs["views"],
        json!({"tables": [{"object_name": "order_view", "schema_name": "app", "table_type": "VIEW"}]})
    );
    assert_eq!(
        outputs["sequences"],
        json!({"sequences": [
            {"object_name": "invoice_seq", "schema_name": "app", "data_type": "integer"},
            {"object_name": "orders_id_seq", "schema_name": "app", "data_type": "integer"},
        ]})
    );
    assert_eq!(outputs["hostile"], json!({"schemas": []}));
    assert_eq!(
        q(
            &pg,
            "postgres",
            "SELECT count(*) FROM pg_database WHERE datname = 'ls_db'"
        ),
        "1"
    );
    // A database that does not exist is an error that names it.
    declare(
        &env,
        &json!([invoke(
            "none",
            "getTables",
            json!({"database": "ls_missing"})
        )]),
    );
    let err = env.fails(&["up", "--yes"]);
    assert!(err.contains("ls_missing"), "{err}");
    env.ok(&["destroy", "--yes"]);
    pg.psql("postgres", "DROP DATABASE ls_db").unwrap();
}

/// A foreign server renamed in place keeps its user mappings (PostgreSQL's `ALTER SERVER ...
/// RENAME` carries them): the mappings, which name the server by its output, are replaced under
/// the new name without a "mapping already exists" or a mapping left behind, and a rename made
/// by hand is read back as drift rather than as mappings gone.
#[test]
fn a_renamed_foreign_server_carries_its_user_mappings() {
    let pg = shared();
    pg.create_database("rn_db").unwrap();
    let env = granted(&pg);
    let spec = |server_name: &str| {
        let server = json!({"$output": ["srv", "server_name"]});
        json!([
            {"type": "postgresql:Extension", "name": "fdw",
             "inputs": {"name": "postgres_fdw", "database": "rn_db"}},
            {"type": "postgresql:Role", "name": "user", "inputs": {"name": "rn_user"}},
            {"type": "postgresql:Server", "name": "srv",
             "inputs": {"server_name": server_name, "fdw_name": {"$output": ["fdw", "name"]},
                        "database": "rn_db", "options": {"host": "10.0.0.9"}}},
            {"type": "postgresql:UserMapping", "name": "mapping",
             "inputs": {"user_name": {"$output": ["user", "name"]}, "server_name": server,
                        "database": "rn_db", "options": {"user": "remote"}, "password": "rn-pw"}},
            {"type": "postgresql:UserMapping", "name": "public_mapping",
             "inputs": {"user_name": "PUBLIC", "server_name": server, "database": "rn_db",
                        "options": {"user": "anon"}}},
        ])
    };
    let mappings = || {
        q(
            &pg,
            "rn_db",
            "SELECT string_agg(srvname || ':' || usename || ':' || array_to_string(umoptions, ';'), ' ' \
             ORDER BY usename) FROM pg_user_mappings",
        )
    };

    declare(&env, &spec("rn_srv"));
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("5 created"), "{out}");
    assert_eq!(
        mappings(),
        "rn_srv:public:user=anon rn_srv:rn_user:password=rn-pw;user=remote"
    );
    let id = recorded(&env, "mapping")["id"].clone();
    assert!(
        id.as_str().unwrap().starts_with("[\"rn_db\","),
        "the mapping's id is [database, OID]: {id}"
    );

    // Renamed by the program: the server in place, its mappings replaced under the new name.
    declare(&env, &spec("rn_srv2"));
    let out = env.ok(&["up", "--yes"]);
    assert!(stepped(&out, "srv", "updated"), "{out}");
    assert!(count_line(&out).contains("2 replaced"), "{out}");
    assert_eq!(
        mappings(),
        "rn_srv2:public:user=anon rn_srv2:rn_user:password=rn-pw;user=remote"
    );
    assert_eq!(
        q(
            &pg,
            "rn_db",
            "SELECT string_agg(srvname, ',') FROM pg_foreign_server"
        ),
        "rn_srv2"
    );
    env.ok(&["preview", "--expect-no-changes"]);
    env.ok(&["refresh", "--expect-no-changes"]);

    // Renamed by hand: refresh finds the mappings under the new name (drift, not gone).
    pg.psql("rn_db", "ALTER SERVER rn_srv2 RENAME TO rn_srv3")
        .unwrap();
    env.fails(&["refresh", "--expect-no-changes"]);
    env.ok(&["refresh", "--yes"]);
    for name in ["mapping", "public_mapping"] {
        assert_eq!(
            recorded(&env, name)["inputs"]["server_name"],
            "rn_srv3",
            "{name}"
        );
    }
    // `up` puts the program's name back, and the mappings with it.
    let out = env.ok(&["up", "--yes"]);
    assert!(stepped(&out, "srv", "updated"), "{out}");
    assert_eq!(
        mappings(),
        "rn_srv2:public:user=anon rn_srv2:rn_user:password=rn-pw;user=remote"
    );
    env.ok(&["preview", "--expect-no-changes"]);

    env.ok(&["destroy", "--yes"]);
    assert_eq!(
        q(
            &pg,
            "rn_db",
            "SELECT (SELECT count(*) FROM pg_foreign_server), (SELECT count(*) FROM pg_user_mappings)"
        ),
        "0|0"
    );
    pg.psql("postgres", "DROP DATABASE rn_db").unwrap();
}

#[test]
fn a_renamed_role_keeps_its_user_mappings() {
    let pg = shared();
    pg.create_database("rr_db").unwrap();
    let env = granted(&pg);
    let spec = |role: &str, mapped: &str| {
        json!([
            {"type": "postgresql:Extension", "name": "fdw",
             "inputs": {"name": "postgres_fdw", "database": "rr_db"}},
            {"type": "postgresql:Role", "name": "user", "inputs": {"name": role}},
            {"type": "postgresql:Role", "name": "other", "inputs": {"name": "rr_other"}},
            {"type": "postgresql:Server", "name": "srv",
             "inputs": {"server_name": "rr_srv", "fdw_name": {"$output": ["fdw", "name"]},
                        "database": "rr_db", "options": {"host": "10.0.0.9"}}},
            {"type": "postgresql:UserMapping", "name": "mapping",
             "inputs": {"user_name": {"$output": [mapped, "name"]},
                        "server_name": {"$output": ["srv", "server_name"]},
                        "database": "rr_db", "options": {"user": "remote"}}},
        ])
    };
    let mapping = || {
        q(
            &pg,
            "rr_db",
            "SELECT string_agg(umid || ':' || usename, ' ') FROM pg_user_mappings",
        )
    };

    declare(&env, &spec("rr_user", "user"));
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("5 created"), "{out}");
    let oid = q(&pg, "rr_db", "SELECT umid FROM pg_user_mappings");
    assert_eq!(mapping(), format!("{oid}:rr_user"));
    let id = recorded(&env, "mapping")["id"].clone();

    // The role renamed in place: its mapping, which holds its OID, is the same mapping.
    declare(&env, &spec("rr_user2", "user"));
    let out = env.ok(&["up", "--yes"]);
    assert!(stepped(&out, "user", "updated"), "{out}");
    assert!(stepped(&out, "mapping", "updated"), "{out}");
    assert!(!count_line(&out).contains("replaced"), "{out}");
    assert_eq!(mapping(), format!("{oid}:rr_user2"));
    let recorded_mapping = recorded(&env, "mapping");
    assert_eq!(recorded_mapping["id"], id);
    assert_eq!(recorded_mapping["inputs"]["user_name"], "rr_user2");
    env.ok(&["preview", "--expect-no-changes"]);
    env.ok(&["refresh", "--expect-no-changes"]);

    // Moved to another role: that is a new mapping.
    declare(&env, &spec("rr_user2", "other"));
    let out = env.ok(&["up", "--yes"]);
    assert!(stepped(&out, "mapping", "replaced"), "{out}");
    let moved = q(&pg, "rr_db", "SELECT umid FROM pg_user_mappings");
    assert_ne!(moved, oid, "a mapping moved to another role is made anew");
    assert_eq!(mapping(), format!("{moved}:rr_other"));
    env.ok(&["preview", "--expect-no-changes"]);

    env.ok(&["destroy", "--yes"]);
    assert_eq!(
        q(&pg, "rr_db", "SELECT count(*) FROM pg_user_mappings"),
        "0"
    );
    pg.psql("postgres", "DROP DATABASE rr_db").unwrap();
}
