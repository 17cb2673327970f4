//! The generated code of each language: SDK names, escaped identifiers, literals of every kind
//! of value, and hostile strings that stay inert.
