//! The runtime's log: `tracing` events written to stderr at the level of `log_level`, each line
//! prefixed with the node id (`[N1] `) once the runtime knows it, and with `[celerity] ` before
//! (e.g. warnings about the environment, written while the communicator starts).
//!
//! The node id is process-wide (one runtime per process); tests that run several in-process
//! nodes in one process see the id of the runtime that started last.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::policy::LogLevel;
use crate::types::NodeId;

const UNKNOWN: u64 = u64::MAX;
static NODE: AtomicU64 = AtomicU64::new(UNKNOWN);

/// Sets the node id shown in every log line.
pub fn set_node(node: NodeId) {
    NODE.store(node.0, Ordering::Relaxed);
}

/// The `[N1] ` prefix of log lines (`[celerity] ` while the node is not known).
pub fn prefix() -> String {
    match NODE.load(Ordering::Relaxed) {
        UNKNOWN => "[celerity] ".to_owned(),
        node => format!("[N{node}] "),
    }
}

/// Wraps a formatter and puts the node prefix in front of each line.
pub struct NodePrefix<F>(pub F);

impl<S, N, F> FormatEvent<S, N> for NodePrefix<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        writer.write_str(&prefix())?;
        self.0.format_event(ctx, writer.by_ref(), event)
    }
}

/// The `tracing` level filter of a `log_level`.
pub fn level_filter(level: LogLevel) -> tracing_subscriber::filter::LevelFilter {
    use tracing_subscriber::filter::LevelFilter;
    match level {
        LogLevel::Trace => LevelFilter::TRACE,
        LogLevel::Debug => LevelFilter::DEBUG,
        LogLevel::Info => LevelFilter::INFO,
        LogLevel::Warn => LevelFilter::WARN,
        LogLevel::Err => LevelFilter::ERROR,
        LogLevel::Off => LevelFilter::OFF,
    }
}

/// Installs the process-wide subscriber (stderr, node prefix, `level`). A subscriber installed
/// earlier (by the program, or an earlier runtime) is kept.
pub fn install(level: LogLevel) {
    let format = tracing_subscriber::fmt::format().with_target(false);
    let _ = tracing_subscriber::fmt()
        .with_max_level(level_filter(level))
        .with_writer(std::io::stderr)
        .event_format(NodePrefix(format))
        .try_init();
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_starts_with_the_node_id_and_the_level_filters() {
        let capture = Capture::default();
        let writer = capture.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(level_filter(LogLevel::Warn))
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .event_format(NodePrefix(
                tracing_subscriber::fmt::format()
                    .with_target(false)
                    .without_time(),
            ))
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("hidden");
            tracing::warn!("shown");
        });
        let text = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
        assert!(!text.contains("hidden"), "{text}");
        let line = text.lines().find(|l| l.contains("shown")).expect("a line");
        assert!(
            line.starts_with("[N") || line.starts_with("[celerity] "),
            "{line}"
        );
        assert!(!line.starts_with("[N?]"), "{line}");
        assert!(line.contains("WARN"), "{line}");
    }
}
