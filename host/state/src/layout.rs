//! The layout of a checkpoint file: indented down to the resource list, each resource on one
//! line. Readable and diffable (one changed resource is one changed line) at a fraction of the
//! size of fully indented JSON, whose indentation grows with every nested property.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::Formatter;

/// Containers nested this deep or less are indented; deeper ones are written on one line
/// (the file's object, the snapshot, its resource list: each resource is one line).
const INDENTED_DEPTH: usize = 3;

/// Serializes `data` as JSON, indenting only its outer [`INDENTED_DEPTH`] levels.
pub(crate) fn to_outlined_json<T: Serialize + ?Sized>(data: &T) -> serde_json::Result<Vec<u8>> {
    to_outlined_json_sized(data, 128)
}

/// [`to_outlined_json`] into a buffer of `capacity` bytes to begin with: a checkpoint of many
/// resources otherwise grows it a doubling at a time, each copying what was written and
/// touching fresh pages.
pub(crate) fn to_outlined_json_sized<T: Serialize + ?Sized>(
    data: &T,
    capacity: usize,
) -> serde_json::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(capacity);
    write_outlined_json(&mut bytes, data)?;
    Ok(bytes)
}

/// Writes `data` to `out` as [`to_outlined_json`] makes it.
pub(crate) fn write_outlined_json<W: Write, T: Serialize + ?Sized>(
    out: W,
    data: &T,
) -> serde_json::Result<()> {
    data.serialize(&mut serde_json::Serializer::with_formatter(
        out,
        Outline::default(),
    ))
}

#[derive(Default)]
struct Outline {
    /// How many containers enclose what is written next.
    depth: usize,
    /// Whether the innermost open container has an element yet.
    has_value: bool,
}

impl Outline {
    fn indented(&self) -> bool {
        self.depth <= INDENTED_DEPTH
    }

    fn open<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        writer.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        let was_indented = self.indented();
        self.depth -= 1;
        if was_indented && self.has_value {
            self.new_line(writer)?;
        }
        writer.write_all(bracket)
    }

    /// Starts an element of the innermost container.
    fn element<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        if !first {
            writer.write_all(b",")?;
        }
        if self.indented() {
            self.new_line(writer)?;
        }
        Ok(())
    }

    fn new_line<W: ?Sized + Write>(&self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b"\n")?;
        (0..self.depth).try_for_each(|_| writer.write_all(b"  "))
    }
}

impl Formatter for Outline {
    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"[")
    }
    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"]")
    }
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.element(writer, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"{")
    }
    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"}")
    }
    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.element(writer, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(if self.indented() { b": " } else { b":" })
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn indents_down_to_the_resources_and_writes_each_on_one_line() {
        let document = json!({
            "version": 2,
            "snapshot": {
                "resources": [
                    {"urn": "a", "inputs": {"length": 8, "tags": ["x", "y"]}},
                    {"urn": "b", "inputs": {}}
                ],
                "pending": []
            }
        });
        let text = String::from_utf8(to_outlined_json(&document).unwrap()).unwrap();
        let expected = r#"{
  "snapshot": {
    "pending": [],
    "resources": [
      {"inputs":{"length":8,"tags":["x","y"]},"urn":"a"},
      {"inputs":{},"urn":"b"}
    ]
  },
  "version": 2
}"#;
        assert_eq!(text, expected);
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, document);
    }
}
