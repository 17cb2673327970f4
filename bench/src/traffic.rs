//! What a command exchanged with the service, as the CLI itself tells it: each service backend
//! it opened logs one line at the end (target `plinth::traffic`), which the benchmark asks for
//! with [`LOG_FILTER`] and reads back from the command's output. Nothing stands between the
//! CLI and the service, so the wall time measured is the service's own.

/// `RUST_LOG` for a measured command: warnings, as without it, and the traffic line.
pub const LOG_FILTER: &str = "warn,plinth::traffic=info";

/// Requests, and their bodies and the answers' as they crossed the wire (gzipped when they
/// were); HTTP heads are not counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Traffic {
    pub requests: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

impl Traffic {
    /// The sum of the traffic lines in `output` (one per backend the command opened); `None`
    /// if there is none.
    pub fn from_output(output: &str) -> Option<Traffic> {
        (output.lines())
            .filter(|line| line.contains("traffic with "))
            .map(Traffic::from_line)
            .reduce(|a, b| Some(a? + b?))?
    }

    /// One line `… traffic with URL requests=N sent=N received=N`.
    fn from_line(line: &str) -> Option<Traffic> {
        let field = |name: &str| {
            (line.split_whitespace())
                .find_map(|word| word.strip_prefix(name)?.strip_prefix('='))
                .and_then(|n| n.parse().ok())
        };
        Some(Traffic {
            requests: field("requests")?,
            bytes_sent: field("sent")?,
            bytes_received: field("received")?,
        })
    }
}

impl std::ops::Add for Traffic {
    type Output = Traffic;

    fn add(self, other: Traffic) -> Traffic {
        Traffic {
            requests: self.requests + other.requests,
            bytes_sent: self.bytes_sent + other.bytes_sent,
            bytes_received: self.bytes_received + other.bytes_received,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_of_every_backend_opened_are_summed_and_a_broken_one_is_not_read() {
        let output = "\
            Updating (bench)\n\
            2026-11-24T07:00:00.000000Z  INFO traffic with http://127.0.0.1:5000 requests=760 \
            sent=1700000 received=3000\n\
            Resources: 10000 created\n\
            2026-11-24T07:00:01.000000Z  INFO traffic with http://127.0.0.1:5000 requests=2 \
            sent=10 received=20\n";
        let expected = Traffic {
            requests: 762,
            bytes_sent: 1_700_010,
            bytes_received: 3_020,
        };
        assert_eq!(Traffic::from_output(output), Some(expected));
        assert_eq!(Traffic::from_output("Resources: 3 created\n"), None);
        let broken = "INFO traffic with http://h requests=7 sent=x received=1\n";
        assert_eq!(Traffic::from_output(broken), None);
    }
}
