//! # site — files written by plinth
//!
//! The `file` provider manages files inside a directory the project grants it (`./public`
//! here, see `Plinth.yaml`). This program writes a small static site there:
//!
//! - `public/index.html`, rendered from `templates/index.html` with the stack's settings;
//! - `public/site.json`, the site's config file, for whatever serves or builds the site;
//! - `public/assets/site.css`, in a directory the program manages too.
//!
//! Try it from this directory:
//!
//! ```text
//! plinth stack init dev
//! plinth up                                  # writes the three files
//! plinth config set title "Plinth Gardens"   # index.html and site.json are updated in place
//! plinth up
//! plinth destroy                             # removes them again
//! ```

use std::collections::BTreeMap;

use plinth_file_sdk::{Directory, File, Template};
use plinth_sdk::{Context, Error, Value};

/// The template of the home page, compiled into the program.
const INDEX: &str = include_str!("../templates/index.html");

const STYLE: &str = "body { font-family: sans-serif; max-width: 40rem; margin: 2rem auto; }\n";

/// Declares the site. The resources come from `plinth-file-sdk`, the typed SDK generated from
/// the file provider's schema (`plinth gen-sdk file --lang rust`, under `sdks/file/rust`).
fn main(ctx: &Context) -> Result<(), Error> {
    let title = ctx.config_or("title", "A plinth site");
    let tagline = ctx.config_or("tagline", "Written by the file provider.");
    let pages = [("Home", "index.html"), ("Config", "site.json")];

    // A directory, and a file in it: taking the path from the directory's output makes the
    // file depend on it, so the directory is created first and deleted last.
    let assets = Directory::builder(ctx, "assets", "assets").register()?;
    let css_path = assets
        .path()
        .apply(|dir| format!("{}/site.css", dir.unwrap_or_default()));
    File::builder(ctx, "style", css_path, STYLE)
        .mode("0644")
        .register()?;

    // The home page: the template's `{{ title }}`, `{{ tagline }}` and `{{ pages }}` come from
    // `vars`. A variable the template uses and `vars` lacks fails `plinth preview`.
    let page_list: Vec<Value> = pages
        .iter()
        .map(|(name, href)| Value::object([("name", *name), ("href", *href)]))
        .collect();
    let vars = BTreeMap::from([
        ("title".to_owned(), Value::from(title.as_str())),
        ("tagline".to_owned(), Value::from(tagline.as_str())),
        ("pages".to_owned(), Value::Array(page_list)),
    ]);
    let index = Template::builder(ctx, "index", "index.html", INDEX)
        .vars(vars)
        .register()?;

    // The config file: plain content, written as given.
    let config =
        File::builder(ctx, "config", "site.json", site_json(&title, &tagline)?).register()?;

    ctx.export("index_sha256", index.sha256());
    ctx.export("config_size", config.size());
    Ok(())
}

/// The site's config file: its settings as JSON.
fn site_json(title: &str, tagline: &str) -> Result<String, Error> {
    let settings = serde_json::json!({ "title": title, "tagline": tagline });
    serde_json::to_string_pretty(&settings)
        .map(|json| json + "\n")
        .map_err(|e| Error::new(format!("writing site.json: {e}")))
}

plinth_sdk::export_program!(main);
