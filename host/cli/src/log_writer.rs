//! Where log lines go: stderr, with every control character in them escaped (guests' printed
//! lines and plugin names reach the log; a line cannot retitle the terminal or overwrite
//! another).

use std::io::{self, Write};

use plinth_engine::shown::escape_controls_keeping_lines;
use tracing_subscriber::fmt::MakeWriter;

/// Makes an [`EscapedWriter`] on stderr for each log line.
pub struct EscapingStderr;

impl<'a> MakeWriter<'a> for EscapingStderr {
    type Writer = EscapedWriter<io::Stderr>;

    fn make_writer(&'a self) -> Self::Writer {
        EscapedWriter(io::stderr())
    }
}

/// Writes what it is given with its control characters escaped, newlines kept. The formatter
/// writes each log line whole, so no character is split across writes.
pub struct EscapedWriter<W>(W);

impl<W: Write> Write for EscapedWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0
            .write_all(escape_controls_keeping_lines(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_reaches_its_writer_escaped_with_its_newline() {
        let mut writer = EscapedWriter(Vec::new());
        let line = b"WARN guest: \x1b]0;owned\x07\rfake \xe2\x80\xae done\n";
        assert_eq!(writer.write(line).unwrap(), line.len());
        assert_eq!(
            String::from_utf8(writer.0).unwrap(),
            "WARN guest: \\u{1b}]0;owned\\u{7}\\rfake \\u{202e} done\n"
        );
    }
}
