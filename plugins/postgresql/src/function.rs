//! `postgresql:Function`: a function (`CREATE OR REPLACE FUNCTION`) with its arguments, body,
//! language and attributes.
//!
//! The id is `DATABASE-OID/FUNCTION-OID`; import takes `DATABASE/SCHEMA.NAME(ARGUMENT TYPES)`,
//! such as `app/public.add(integer, integer)`. The body, the language and the attributes change
//! in place (the function keeps its OID and its grants); its name, schema, arguments and
//! result type are its identity: a change replaces it.
//!
//! Types are resolved by the server (`to_regtype`) before they reach SQL text, and a default is
//! a constant of its argument's type: no input is spliced into a statement as SQL.

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema,
    TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::in_database::{self, InDatabase};
use crate::server::{Lookup, Server, Session, text};
use crate::sql::{self, ident, literal, qualified};

/// One argument of a function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct FunctionArg {
    /// The argument's type, such as `integer`, `text[]` or `public.my_type`.
    #[serde(rename = "type")]
    pub(crate) ty: String,
    /// The argument's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    /// `IN` (the default), `OUT`, `INOUT` or `VARIADIC`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) mode: Option<String>,
    /// A constant of the argument's type used when a call leaves it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) default: Option<String>,
}

/// The inputs of `postgresql:Function`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct FunctionInputs {
    /// The function's name.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) name: String,
    /// Its schema; absent: `public`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) schema: Option<String>,
    /// Its database; absent: the provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) database: Option<String>,
    /// Its arguments, in order.
    #[serde(default)]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) args: Vec<FunctionArg>,
    /// The type it returns (`SETOF type` for a set); absent: `void`, or what the `OUT`
    /// arguments make.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) returns: Option<String>,
    /// The language: `plpgsql` (the default), `sql`, or another installed one.
    #[serde(default = "plpgsql")]
    pub(crate) language: String,
    /// The body: the text between `AS $$` and `$$`.
    pub(crate) body: String,
    /// `VOLATILE` (the default), `STABLE` or `IMMUTABLE`.
    #[serde(default = "volatile")]
    pub(crate) volatility: String,
    /// `UNSAFE` (the default), `RESTRICTED` or `SAFE`.
    #[serde(default = "unsafe_")]
    pub(crate) parallel: String,
    /// It runs with its owner's privileges instead of the caller's.
    #[serde(default)]
    pub(crate) security_definer: bool,
    /// It returns NULL, without running, when an argument is NULL.
    #[serde(default)]
    pub(crate) strict: bool,
    /// Deleting it also drops what depends on it (triggers, operators).
    #[serde(default)]
    pub(crate) drop_cascade: bool,
}

fn plpgsql() -> String {
    "plpgsql".to_owned()
}
fn volatile() -> String {
    "VOLATILE".to_owned()
}
fn unsafe_() -> String {
    "UNSAFE".to_owned()
}

/// The outputs: the function as the server has it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct FunctionOutputs {
    pub(crate) name: String,
    pub(crate) schema: String,
    pub(crate) database: String,
    /// Its signature, as `GRANT ... ON FUNCTION` takes it: `schema.name(types)`.
    pub(crate) signature: String,
    /// The type it returns, as the server spells it.
    pub(crate) returns: String,
    pub(crate) language: String,
    pub(crate) body: String,
    pub(crate) volatility: String,
    pub(crate) parallel: String,
    pub(crate) security_definer: bool,
    pub(crate) strict: bool,
    /// The function's OID in its database.
    pub(crate) oid: i64,
}

/// The `postgresql:Function` resource type.
pub(crate) struct Function(pub(crate) Server);

const MODES: [&str; 4] = ["IN", "OUT", "INOUT", "VARIADIC"];
const VOLATILITIES: [&str; 3] = ["VOLATILE", "STABLE", "IMMUTABLE"];
const PARALLEL: [&str; 3] = ["UNSAFE", "RESTRICTED", "SAFE"];

fn one_of(property: &str, value: &str, allowed: &[&str]) -> Option<CheckFailure> {
    (!allowed.contains(&value.to_uppercase().as_str())).then(|| {
        CheckFailure::new(
            property,
            format!("`{value}` is not one of {}", allowed.join(", ")),
        )
    })
}

/// A type name as the server resolves it, quoted as the server quotes it.
fn resolve_type(session: &mut Session, ty: &str) -> Result<String, ProviderError> {
    let sql = format!("SELECT to_regtype({})::text", literal(ty.trim()));
    match session
        .row("resolving a type", &sql)?
        .and_then(|row| row[0].clone())
    {
        Some(resolved) => Ok(resolved),
        None => Err(ProviderError::failed(format!(
            "`{ty}` is not a type the database knows"
        ))),
    }
}

/// `SETOF x` and `x`, resolved.
fn resolve_returns(session: &mut Session, returns: &str) -> Result<String, ProviderError> {
    let trimmed = returns.trim();
    match trimmed.get(..6) {
        Some(prefix) if prefix.eq_ignore_ascii_case("setof ") => {
            Ok(format!("SETOF {}", resolve_type(session, &trimmed[6..])?))
        }
        _ => resolve_type(session, trimmed),
    }
}

/// `(mode name type DEFAULT 'x'::type, ...)`, every part resolved or quoted.
fn arguments(session: &mut Session, f: &FunctionInputs) -> Result<String, ProviderError> {
    let mut list = Vec::new();
    for arg in &f.args {
        let ty = resolve_type(session, &arg.ty)?;
        let mut text = String::new();
        if let Some(mode) = &arg.mode {
            text += &format!("{} ", mode.to_uppercase());
        }
        if let Some(name) = &arg.name {
            text += &format!("{} ", ident(name));
        }
        text += &ty;
        if let Some(default) = &arg.default {
            text += &format!(" DEFAULT {}::{ty}", literal(default));
        }
        list.push(text);
    }
    Ok(format!("({})", list.join(", ")))
}

/// The `CREATE OR REPLACE FUNCTION` statement of `f`.
fn definition(session: &mut Session, f: &FunctionInputs) -> Result<String, ProviderError> {
    let schema = f.schema.as_deref().unwrap_or("public");
    let mut sql = format!(
        "CREATE OR REPLACE FUNCTION {}{}",
        qualified(schema, &f.name),
        arguments(session, f)?
    );
    let has_out = (f.args.iter()).any(|a| {
        matches!(
            a.mode.as_deref().map(str::to_uppercase).as_deref(),
            Some("OUT" | "INOUT")
        )
    });
    match &f.returns {
        Some(returns) => sql += &format!(" RETURNS {}", resolve_returns(session, returns)?),
        None if !has_out => sql += " RETURNS void",
        None => {}
    }
    sql += &format!(
        " LANGUAGE {} {} PARALLEL {}{}{} AS {}",
        ident(&f.language),
        f.volatility.to_uppercase(),
        f.parallel.to_uppercase(),
        if f.security_definer {
            " SECURITY DEFINER"
        } else {
            " SECURITY INVOKER"
        },
        if f.strict {
            " STRICT"
        } else {
            " CALLED ON NULL INPUT"
        },
        literal(&f.body)
    );
    Ok(sql)
}

/// The condition (on `p`, `pg_proc`) selecting the function `lookup` names: by OID, or by
/// its signature, `schema.name(argument types)`.
fn condition(lookup: &Lookup<'_>) -> String {
    match lookup {
        Lookup::Oid(oid) => format!("p.oid = {oid}"),
        Lookup::Name(signature) => {
            format!("p.oid = to_regprocedure({})::oid", literal(signature))
        }
    }
}

impl InDatabase for Function {
    const KIND: &'static str = "function";
    const KEYWORD: &'static str = "FUNCTION";
    type Outputs = FunctionOutputs;

    fn server(&self) -> &Server {
        &self.0
    }

    fn fetch(
        session: &mut Session,
        database: &str,
        lookup: Lookup<'_>,
    ) -> Result<Option<FunctionOutputs>, ProviderError> {
        let sql = format!(
            "SELECT p.oid, p.proname, n.nspname, \
             format('%I.%I(%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)), \
             pg_get_function_result(p.oid), l.lanname, p.prosrc, \
             CASE p.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE' ELSE 'VOLATILE' END, \
             CASE p.proparallel WHEN 's' THEN 'SAFE' WHEN 'r' THEN 'RESTRICTED' ELSE 'UNSAFE' END, \
             p.prosecdef, p.proisstrict \
             FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
             JOIN pg_language l ON l.oid = p.prolang WHERE p.prokind = 'f' AND {}",
            condition(&lookup)
        );
        Ok(session
            .row("reading the function", &sql)?
            .map(|row| FunctionOutputs {
                oid: text(&row, 0).parse().unwrap_or_default(),
                name: text(&row, 1),
                schema: text(&row, 2),
                signature: text(&row, 3),
                returns: text(&row, 4),
                language: text(&row, 5),
                body: text(&row, 6),
                volatility: text(&row, 7),
                parallel: text(&row, 8),
                security_definer: sql::boolean(row[9].as_deref()),
                strict: sql::boolean(row[10].as_deref()),
                database: database.to_owned(),
            }))
    }

    fn key(outputs: &FunctionOutputs) -> String {
        outputs.oid.to_string()
    }

    fn name(outputs: &FunctionOutputs) -> &str {
        &outputs.name
    }

    /// A function's name is not unique: `DROP` takes its signature.
    fn drop_target(outputs: &FunctionOutputs) -> String {
        outputs.signature.clone()
    }
}

impl TypedResource for Function {
    type Inputs = FunctionInputs;
    type Outputs = FunctionOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:Function")
            .describe("A function: its arguments, body, language and attributes.")
    }

    fn validate(&self, _: &ResourceContext<'_>, f: &FunctionInputs) -> Vec<CheckFailure> {
        let mut names = vec![("name", f.name.as_str()), ("language", f.language.as_str())];
        names.extend(f.schema.as_deref().map(|s| ("schema", s)));
        names.extend(f.database.as_deref().map(|d| ("database", d)));
        names.extend(
            f.args
                .iter()
                .filter_map(|a| a.name.as_deref().map(|n| ("args", n))),
        );
        let mut failures = sql::check_names(names);
        failures.extend(one_of("volatility", &f.volatility, &VOLATILITIES));
        failures.extend(one_of("parallel", &f.parallel, &PARALLEL));
        for arg in &f.args {
            failures.extend(arg.mode.as_deref().and_then(|m| one_of("args", m, &MODES)));
            if arg.ty.trim().is_empty() {
                failures.push(CheckFailure::new("args", "an argument needs its `type`"));
            }
        }
        if f.body.contains('\0') {
            failures.push(CheckFailure::new(
                "body",
                "must not contain a NUL character",
            ));
        }
        failures
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        f: FunctionInputs,
    ) -> Result<Created<FunctionOutputs>, ProviderError> {
        let mut session = self.0.connect(f.database.as_deref())?;
        let schema = f.schema.as_deref().unwrap_or("public");
        // Refuses to take over a function that exists: that is what import is for.
        let sql = definition(&mut session, &f)?.replacen("CREATE OR REPLACE", "CREATE", 1);
        session.run(&format!("creating function `{}`", f.name), &sql)?;
        let mut types = Vec::new();
        for arg in f.args.iter().filter(|a| !is_out_only(a)) {
            types.push(resolve_type(&mut session, &arg.ty)?);
        }
        let identity = format!("{}({})", qualified(schema, &f.name), types.join(", "));
        let database = self.0.database_or_home(f.database.as_deref());
        in_database::created::<Self>(&mut session, database, &identity)
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: FunctionInputs,
        _: FunctionOutputs,
    ) -> Result<Option<ReadResult<FunctionInputs, FunctionOutputs>>, ProviderError> {
        let Some(found) = self.find(&id)? else {
            return Ok(None);
        };
        let current = &found.current;
        // The identity (arguments, result) cannot change under an OID: it stays as given.
        let read = FunctionInputs {
            name: current.name.clone(),
            schema: match &inputs.schema {
                None if current.schema == "public" => None,
                _ => Some(current.schema.clone()),
            },
            database: self
                .0
                .database_input(inputs.database.as_deref(), &found.database),
            language: current.language.clone(),
            body: current.body.clone(),
            volatility: keep_case(&inputs.volatility, &current.volatility),
            parallel: keep_case(&inputs.parallel, &current.parallel),
            security_definer: current.security_definer,
            strict: current.strict,
            ..inputs
        };
        found.read_result(read).map(Some)
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        old: FunctionInputs,
        _: FunctionOutputs,
        new: FunctionInputs,
    ) -> Result<FunctionOutputs, ProviderError> {
        let mut found = self.find_recorded(id, &old.name)?;
        let sql = definition(&mut found.session, &new)?;
        (found.session).run(&format!("defining function `{}`", new.name), &sql)?;
        found.reread(&new.name)
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        f: FunctionInputs,
        _: FunctionOutputs,
    ) -> Result<(), ProviderError> {
        self.drop_object(id, f.drop_cascade)
    }
}

/// Whether `arg` is only a result, not part of the function's identity.
fn is_out_only(arg: &FunctionArg) -> bool {
    arg.mode
        .as_deref()
        .is_some_and(|m| m.eq_ignore_ascii_case("OUT"))
}

/// The input's spelling when it names what the server has in another case.
fn keep_case(given: &str, found: &str) -> String {
    if given.eq_ignore_ascii_case(found) {
        given.to_owned()
    } else {
        found.to_owned()
    }
}
