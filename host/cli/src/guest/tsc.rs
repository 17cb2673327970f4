//! Type-checking a TypeScript guest with the TypeScript compiler `scripts/setup` installs
//! beside esbuild, as `pulumi up` does: esbuild only strips types. The check reads a tsconfig
//! plinth writes in the build's scratch directory, extending the project's own when it has
//! one, with `@plinth/sdk`, its `node:*` modules and the generated SDKs the project depends on
//! by path resolved as the bundler resolves them; errors are listed as `file:line:column:
//! message`. A check that passes says which files it read (`--listFiles`): they key it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use serde_json::json;

/// `--skip-typecheck`: guests are built without their types checked.
static SKIP_TYPECHECK: AtomicBool = AtomicBool::new(false);

/// Builds this process's guests without checking their types (`--skip-typecheck`).
pub fn skip_typecheck() {
    SKIP_TYPECHECK.store(true, Ordering::Relaxed);
}

/// Whether this process's guests have their types checked.
pub fn typecheck_enabled() -> bool {
    !SKIP_TYPECHECK.load(Ordering::Relaxed)
}

/// The version `scripts/setup` installs (keep the two in step).
pub const TYPESCRIPT: &str = "7.0.2";

/// The compiler, run by `node`.
pub fn compiler(modules: &Path) -> PathBuf {
    modules.join("typescript/bin/tsc")
}

/// One check: the guest's entry module and how its imports resolve.
pub struct Check<'a> {
    pub node: &'a Path,
    pub tsc: &'a Path,
    pub project: &'a Path,
    pub entry: &'a Path,
    /// `(specifier, file)`: `@plinth/sdk`, `node:fs`, generated SDKs, ...
    pub paths: Vec<(String, PathBuf)>,
    /// Declarations of the imports componentize-js binds (`plinth:plugin/*`, `wasi:*`).
    pub declarations: Vec<PathBuf>,
    pub work: &'a Path,
    pub what: &'a str,
}

/// Checks the guest's types; the files the compiler read.
pub fn check(check: &Check) -> Result<Vec<PathBuf>> {
    let own = check.project.join("tsconfig.json");
    let mut options = json!({
        "noEmit": true,
        "skipLibCheck": true,
        "target": "ES2022",
        "module": "ESNext",
        "moduleResolution": "bundler",
        "allowImportingTsExtensions": true,
        "resolveJsonModule": true,
        "lib": ["ES2022", "DOM"],
        "types": [],
        "paths": check.paths.iter()
            .map(|(name, file)| (name.clone(), json!([file])))
            .collect::<serde_json::Map<_, _>>(),
    });
    let mut config = json!({
        "files": std::iter::once(check.entry).chain(check.declarations.iter().map(PathBuf::as_path))
            .collect::<Vec<_>>(),
        "include": [],
    });
    if own.is_file() {
        config["extends"] = json!(own);
    } else {
        options["strict"] = json!(true);
    }
    config["compilerOptions"] = options;
    let tsconfig = check.work.join("tsconfig.json");
    std::fs::write(&tsconfig, serde_json::to_vec_pretty(&config)?)?;
    let output = Command::new(check.node)
        .arg(check.tsc)
        .arg("-p")
        .arg(&tsconfig)
        .args(["--pretty", "false", "--listFiles"])
        .current_dir(check.project)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("{}: cannot run the TypeScript compiler", check.what))?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    // The files read, one absolute path a line, among the errors if there are any.
    let (read, said): (Vec<&str>, Vec<&str>) =
        (text.lines()).partition(|line| Path::new(line).is_absolute() && Path::new(line).is_file());
    if output.status.success() {
        return Ok(read.into_iter().map(PathBuf::from).collect());
    }
    let errors: Vec<String> = said.into_iter().map(located).collect();
    bail!(
        "{}: type errors (fix them, or build without checking with --skip-typecheck):\n{}",
        check.what,
        errors.join("\n").trim_end()
    )
}

/// tsc's `file(line,col): error TS1234: message` as `file:line:col: message (TS1234)`; other
/// lines (an error's continuation) as they are.
fn located(line: &str) -> String {
    parse(line).unwrap_or_else(|| line.to_owned())
}

fn parse(line: &str) -> Option<String> {
    let (place, rest) = line.split_once("): error ")?;
    let (file, position) = place.rsplit_once('(')?;
    let (line_no, column) = position.split_once(',')?;
    let (code, message) = rest.split_once(": ")?;
    Some(format!("{file}:{line_no}:{column}: {message} ({code})"))
}

#[cfg(test)]
mod tests {
    use super::located;

    #[test]
    fn errors_are_shown_by_file_and_line() {
        assert_eq!(
            located(
                "index.ts(12,7): error TS2322: Type 'string' is not assignable to type 'number'."
            ),
            "index.ts:12:7: Type 'string' is not assignable to type 'number'. (TS2322)"
        );
        assert_eq!(
            located("  Property 'x' is missing."),
            "  Property 'x' is missing."
        );
    }
}
