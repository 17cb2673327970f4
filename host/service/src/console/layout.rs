//! The frame of every page: its head (the embedded stylesheet, no script but the console's
//! own), the navigation, and who is signed in with what.

use maud::{DOCTYPE, Markup, html};

use super::session::Viewer;

/// A page for a signed-in user.
pub(super) fn page(title: &str, viewer: &Viewer, body: Markup) -> Markup {
    let user = &viewer.user;
    frame(
        title,
        html! {
            nav {
                a href="/" { "Stacks" }
                " · " a href="/tokens" { "Tokens" }
                @if user.scope.level >= crate::auth::Level::Admin {
                    " · " a href="/audit" { "Audit log" }
                }
                span.who {
                    (user.name) " · " (user.scope.describe()) " "
                    form.inline method="post" action="/signout" {
                        input type="hidden" name="csrf" value=(viewer.csrf);
                        button type="submit" { "Sign out" }
                    }
                }
            }
            main { (body) }
        },
    )
}

/// A page without a session: the sign-in form, an error.
pub(super) fn bare(title: &str, body: Markup) -> Markup {
    frame(title, html! { main { (body) } })
}

fn frame(title: &str, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · plinth" }
                link rel="stylesheet" href="/assets/console.css";
            }
            body { (content) }
        }
    }
}
