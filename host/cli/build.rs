// The commit plinth is built from: see the file included.
include!("../build/commit.rs");
