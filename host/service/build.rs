// The commit plinth-serve is built from: see the file included.
include!("../build/commit.rs");
