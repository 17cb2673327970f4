//! `plinth cli-reference` (hidden): the CLI reference of the book, docs/cli-reference.md,
//! written from the clap definitions themselves so that it cannot drift from them. The suite
//! fails when the committed page is not what this prints (tests/e2e/book.rs).

use std::fmt::Write;

use clap::{Arg, Command};

/// The command that rewrites the page, named in it and by the test that finds it stale.
pub const REFRESH: &str = "cargo run --bin plinth -- cli-reference > docs/cli-reference.md";

/// The Markdown page of every visible command of `root`, its arguments and flags.
pub fn markdown(mut root: Command) -> String {
    // Propagates the global flags and the binary's name to every subcommand.
    root.build();
    let mut page = String::new();
    page.push_str("# CLI reference\n\n");
    let _ = writeln!(
        page,
        "<!-- Generated from plinth's command definitions by `plinth cli-reference`: do not \
         edit. Refresh with `{REFRESH}`. -->\n"
    );
    page.push_str(
        "Every command of `plinth` with its arguments and flags, as `plinth help` knows them. \
         [Using the CLI](cli.md) says how they fit together: output, exit codes, names, \
         configuration.\n\n",
    );
    page.push_str("## Global flags\n\nAccepted by every command.\n\n");
    let globals: Vec<&Arg> = (root.get_arguments())
        .filter(|a| a.is_global_set() && shown(a))
        .collect();
    args_list(&mut page, &globals);
    section(&mut page, &mut root, 1);
    page
}

/// `cmd`'s section, then its subcommands' (their headings one level deeper, at most `####`).
fn section(page: &mut String, cmd: &mut Command, level: usize) {
    let path = cmd.get_bin_name().unwrap_or(cmd.get_name()).to_owned();
    let is_root = !path.contains(' ');
    if !is_root {
        let _ = writeln!(page, "{} {path}\n", "#".repeat(level));
        if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
            let _ = writeln!(page, "{}\n", text(&about.to_string()));
        }
        let usage = cmd.render_usage().to_string();
        let usage = usage.trim().trim_start_matches("Usage:").trim();
        let _ = writeln!(page, "```text\n{usage}\n```\n");
        let args: Vec<&Arg> = (cmd.get_arguments())
            .filter(|a| !a.is_global_set() && shown(a))
            .collect();
        let (positionals, options): (Vec<&Arg>, Vec<&Arg>) =
            args.into_iter().partition(|a| a.is_positional());
        if !positionals.is_empty() {
            page.push_str("Arguments:\n\n");
            args_list(page, &positionals);
        }
        if !options.is_empty() {
            page.push_str("Options:\n\n");
            args_list(page, &options);
        }
    }
    let subcommands: Vec<(String, String, String)> = (cmd.get_subcommands())
        .filter(|s| listed(s))
        .map(|s| {
            let name = s.get_name().to_owned();
            let about = s.get_about().map(|a| a.to_string()).unwrap_or_default();
            (name, anchor(&format!("{path} {}", s.get_name())), about)
        })
        .collect();
    if subcommands.is_empty() {
        return;
    }
    page.push_str(if is_root {
        "## Commands\n\n"
    } else {
        "Commands:\n\n"
    });
    for (name, anchor, about) in &subcommands {
        let _ = writeln!(page, "- [`{name}`](#{anchor}): {}", text(first_line(about)));
    }
    page.push('\n');
    let deeper = (level + 1).min(4);
    for sub in cmd.get_subcommands_mut().filter(|s| listed(s)) {
        section(page, sub, deeper);
    }
}

/// Whether a subcommand belongs in the reference: not hidden, not clap's own `help`.
fn listed(cmd: &Command) -> bool {
    !cmd.is_hide_set() && cmd.get_name() != "help"
}

/// Whether an argument belongs in the reference: not hidden, not clap's own `--help` and
/// `--version`.
fn shown(arg: &Arg) -> bool {
    !arg.is_hide_set() && !matches!(arg.get_id().as_str(), "help" | "version")
}

/// A list item per argument: how it is written, what it does, its values, default and variable.
fn args_list(page: &mut String, args: &[&Arg]) {
    for arg in args {
        let mut item = format!("- `{}`", spelling(arg));
        if let Some(help) = arg.get_long_help().or(arg.get_help()) {
            let help = text(&help.to_string());
            let _ = write!(item, ": {help}");
            // clap drops the last period of a one-line help: the sentences below need one.
            if !help.ends_with('.') {
                item.push('.');
            }
        }
        let values: Vec<String> = (arg.get_possible_values().iter())
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_owned())
            .collect();
        if !values.is_empty() && arg.get_action().takes_values() {
            let _ = write!(item, " One of `{}`.", values.join("`, `"));
        }
        let defaults: Vec<String> = (arg.get_default_values().iter())
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        if !defaults.is_empty() && arg.get_action().takes_values() {
            let _ = write!(item, " Default: `{}`.", defaults.join(" "));
        }
        if let Some(env) = arg.get_env() {
            let _ = write!(item, " Environment: `{}`.", env.to_string_lossy());
        }
        // Continuation lines of a list item are indented under it.
        page.push_str(&item.replace('\n', "\n  "));
        page.push('\n');
    }
    page.push('\n');
}

/// How an argument is written on the command line: `-s, --stack <NAME>`, `[DIR]`, `<ARGS>...`.
fn spelling(arg: &Arg) -> String {
    let value_names: Vec<String> = match arg.get_value_names() {
        Some(names) => names.iter().map(|n| n.to_string()).collect(),
        None => vec![arg.get_id().as_str().to_uppercase()],
    };
    let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    let values = value_names
        .iter()
        .map(|n| format!("<{n}>"))
        .collect::<Vec<_>>()
        .join(" ");
    let values = if many { format!("{values}...") } else { values };
    if arg.is_positional() {
        return if arg.is_required_set() {
            values
        } else {
            format!("[{}]", values.trim_start_matches('<').replacen('>', "", 1))
        };
    }
    let mut names = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        names.push(format!("--{long}"));
    }
    let mut spelled = names.join(", ");
    if arg.get_action().takes_values() {
        let _ = write!(spelled, " {values}");
    }
    spelled
}

/// Help text as Markdown: `<` and `>` outside code spans escaped, so that `<name>` shows rather
/// than being taken for HTML.
fn text(help: &str) -> String {
    let mut out = String::with_capacity(help.len());
    let mut in_code = false;
    for c in help.trim().chars() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            '<' if !in_code => out.push_str("&lt;"),
            '>' if !in_code => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}

fn first_line(text: &str) -> &str {
    text.split("\n\n").next().unwrap_or_default()
}

/// The anchor of a heading, as GitHub and mdbook make it: lowercase, spaces as `-`.
fn anchor(heading: &str) -> String {
    (heading.to_lowercase().chars())
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn angle_brackets_outside_code_are_escaped() {
        assert_eq!(text("the <name> of `<dir>`"), "the &lt;name&gt; of `<dir>`");
    }

    #[test]
    fn anchors_follow_the_headings() {
        assert_eq!(anchor("plinth stack init"), "plinth-stack-init");
        assert_eq!(anchor("plinth gen-sdk"), "plinth-gen-sdk");
    }
}
