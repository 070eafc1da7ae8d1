//! Runtime configuration: the keys of API.md's table, parsed and validated, from a
//! `celerity_config` object and from `CELERITY_*` environment variables (explicit keys win).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::backend::interface::GraphCapture;
use crate::error::{Error, Result};

pub use crate::policy::{ErrorPolicy, GraphFormat, LogLevel, Lookahead, SchedulerThreads};

/// Which devices the runtime uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceSelection {
    /// All CUDA devices if any, else one emulated host device.
    Auto,
    /// All CUDA devices; an error if there is no usable CUDA driver.
    Cuda,
    /// `n` emulated devices on the CPU, each with its own memory and worker thread.
    Host(u32),
}

/// The validated configuration of a runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `log_level`.
    pub log_level: LogLevel,
    /// `devices`.
    pub devices: DeviceSelection,
    /// `host_device_peer_copies`.
    pub host_device_peer_copies: bool,
    /// `horizon_step`.
    pub horizon_step: u32,
    /// `horizon_max_parallelism`.
    pub horizon_max_parallelism: u32,
    /// `lookahead`.
    pub lookahead: Lookahead,
    /// `scheduler_threads`.
    pub scheduler_threads: SchedulerThreads,
    /// `dry_run_nodes`: `Some(n)` simulates n nodes and executes nothing.
    pub dry_run_nodes: Option<u32>,
    /// `print_graphs`.
    pub print_graphs: bool,
    /// `graph_dir`.
    pub graph_dir: PathBuf,
    /// `graph_format`.
    pub graph_format: GraphFormat,
    /// `graph_tasks`: print only the records of tasks `first..=last` (all when `None`).
    pub graph_tasks: Option<(u64, u64)>,
    /// `trace_file`.
    pub trace_file: Option<PathBuf>,
    /// `uninitialized_read`.
    pub uninitialized_read: ErrorPolicy,
    /// `overlapping_write`.
    pub overlapping_write: ErrorPolicy,
    /// `stall_timeout`: report pending instructions when none completed for this long.
    pub stall_timeout: Duration,
    /// `accessor_boundary_check`: `Ignore` gives kernels no bounds records (off), `Log` reports
    /// violations at error level (on), `Error` also fails the task with `AccessPattern`.
    pub accessor_boundary_check: ErrorPolicy,
    /// `pinned_memory_limit`: most bytes of page-locked host memory the CUDA backend holds
    /// (pool blocks, staging slots and the page-locked copies of host-initialised buffers).
    pub pinned_memory_limit: usize,
    /// `check_spmd`: compare the nodes' submissions at horizons and epochs (on in debug builds).
    pub check_spmd: bool,
    /// `cuda_graphs`: which kernels queued back to back on one stream the CUDA backend launches
    /// as one captured CUDA graph: `auto` those declared launch-only (the C++ frontend's device
    /// lambdas), `on` all, `off` none.
    pub cuda_graphs: GraphCapture,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            log_level: LogLevel::Info,
            devices: DeviceSelection::Auto,
            host_device_peer_copies: true,
            horizon_step: 4,
            horizon_max_parallelism: 64,
            lookahead: Lookahead::Auto,
            scheduler_threads: SchedulerThreads::Auto,
            dry_run_nodes: None,
            print_graphs: false,
            graph_dir: PathBuf::from("."),
            graph_format: GraphFormat::Dot,
            graph_tasks: None,
            trace_file: None,
            uninitialized_read: ErrorPolicy::Log,
            overlapping_write: ErrorPolicy::Log,
            stall_timeout: Duration::from_secs(20),
            accessor_boundary_check: ErrorPolicy::Log,
            pinned_memory_limit: DEFAULT_PINNED_MEMORY_LIMIT,
            check_spmd: cfg!(debug_assertions),
            cuda_graphs: GraphCapture::LaunchOnly,
        }
    }
}

/// One configuration key: its name, what it accepts (for messages) and how it is applied.
struct Key {
    name: &'static str,
    accepts: &'static str,
    apply: fn(&mut Config, &str) -> Option<()>,
}

/// Names are matched in any case, as C++ Celerity's environment parsing does.
fn choice<T: Copy>(value: &str, choices: &[(&str, T)]) -> Option<T> {
    choices
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(value))
        .map(|&(_, v)| v)
}

/// The boolean spellings C++ Celerity accepts, so users can bring their environment along.
fn boolean(value: &str) -> Option<bool> {
    choice(
        value,
        &[
            ("1", true),
            ("0", false),
            ("true", true),
            ("false", false),
            ("on", true),
            ("off", false),
            ("yes", true),
            ("no", false),
        ],
    )
}

/// What the messages list for a boolean key.
const BOOLEAN_ACCEPTS: &str = "on/off, true/false, yes/no, 1/0 (any case)";

fn positive(value: &str, max: u32) -> Option<u32> {
    value.parse::<u32>().ok().filter(|&n| n >= 1 && n <= max)
}

fn policy(value: &str) -> Option<ErrorPolicy> {
    choice(
        value,
        &[
            ("ignore", ErrorPolicy::Ignore),
            ("log", ErrorPolicy::Log),
            ("error", ErrorPolicy::Error),
        ],
    )
}

/// `graph_tasks`: `N` (tasks T0 to T(N-1), N >= 1) or `A-B` / `TA-TB` (inclusive, A <= B).
fn task_range(value: &str) -> Option<(u64, u64)> {
    let id = |s: &str| s.trim().trim_start_matches(['T', 't']).parse::<u64>().ok();
    match value.split_once('-') {
        Some((first, last)) => {
            let (first, last) = (id(first)?, id(last)?);
            (first <= last).then_some((first, last))
        }
        None => {
            let n = value.trim().parse::<u64>().ok()?;
            (n >= 1).then(|| (0, n - 1))
        }
    }
}

/// Seconds in (0, 86400], integral or not (`20`, `0.5`).
fn seconds(value: &str) -> Option<Duration> {
    let secs = value.parse::<f64>().ok()?;
    (secs.is_finite() && secs > 0.0 && secs <= 86400.0).then(|| Duration::from_secs_f64(secs))
}

/// The default of `pinned_memory_limit` (4 GiB).
pub const DEFAULT_PINNED_MEMORY_LIMIT: usize = 4 << 30;

/// A byte count with an optional binary suffix (`K`, `M`, `G`, `T`), at most 1 TiB.
fn byte_count(value: &str) -> Option<usize> {
    let (digits, shift) = match value.as_bytes().last()? {
        b'K' => (&value[..value.len() - 1], 10),
        b'M' => (&value[..value.len() - 1], 20),
        b'G' => (&value[..value.len() - 1], 30),
        b'T' => (&value[..value.len() - 1], 40),
        _ => (value, 0),
    };
    let bytes = digits.parse::<u64>().ok()?.checked_mul(1 << shift)?;
    (bytes <= 1 << 40).then(|| usize::try_from(bytes).ok())?
}

fn non_empty_path(value: &str) -> Option<PathBuf> {
    (!value.is_empty()).then(|| PathBuf::from(value))
}

const KEYS: &[Key] = &[
    Key {
        name: "log_level",
        accepts: "trace, debug, info, warn, err, critical, off (any case)",
        apply: |c, v| {
            use LogLevel::*;
            let levels = [
                ("trace", Trace),
                ("debug", Debug),
                ("info", Info),
                ("warn", Warn),
                ("warning", Warn),
                ("err", Err),
                ("error", Err),
                // The runtime logs nothing above error, so critical shows the same lines as err.
                ("critical", Err),
                ("off", Off),
            ];
            c.log_level = choice(v, &levels)?;
            Some(())
        },
    },
    Key {
        name: "devices",
        accepts: "auto, cuda, host, host:N with 1 <= N <= 64",
        apply: |c, v| {
            c.devices = match v {
                "auto" => DeviceSelection::Auto,
                "cuda" => DeviceSelection::Cuda,
                "host" => DeviceSelection::Host(1),
                _ => DeviceSelection::Host(positive(v.strip_prefix("host:")?, 64)?),
            };
            Some(())
        },
    },
    Key {
        name: "host_device_peer_copies",
        accepts: BOOLEAN_ACCEPTS,
        apply: |c, v| {
            c.host_device_peer_copies = boolean(v)?;
            Some(())
        },
    },
    Key {
        name: "horizon_step",
        accepts: "an integer from 1 to 65536",
        apply: |c, v| {
            c.horizon_step = positive(v, 65536)?;
            Some(())
        },
    },
    Key {
        name: "horizon_max_parallelism",
        accepts: "an integer from 1 to 65536",
        apply: |c, v| {
            c.horizon_max_parallelism = positive(v, 65536)?;
            Some(())
        },
    },
    Key {
        name: "lookahead",
        accepts: "none, auto, infinite",
        apply: |c, v| {
            let modes = [
                ("none", Lookahead::None),
                ("auto", Lookahead::Auto),
                ("infinite", Lookahead::Infinite),
            ];
            c.lookahead = choice(v, &modes)?;
            Some(())
        },
    },
    Key {
        name: "scheduler_threads",
        accepts: "auto, 1, 2",
        apply: |c, v| {
            let counts = [
                ("auto", SchedulerThreads::Auto),
                ("1", SchedulerThreads::One),
                ("2", SchedulerThreads::Two),
            ];
            c.scheduler_threads = choice(v, &counts)?;
            Some(())
        },
    },
    Key {
        name: "dry_run_nodes",
        accepts: "an integer from 1 to 256",
        apply: |c, v| {
            c.dry_run_nodes = Some(positive(v, 256)?);
            Some(())
        },
    },
    Key {
        name: "print_graphs",
        accepts: BOOLEAN_ACCEPTS,
        apply: |c, v| {
            c.print_graphs = boolean(v)?;
            Some(())
        },
    },
    Key {
        name: "graph_dir",
        accepts: "a non-empty directory path",
        apply: |c, v| {
            c.graph_dir = non_empty_path(v)?;
            Some(())
        },
    },
    Key {
        name: "graph_format",
        accepts: "dot, json",
        apply: |c, v| {
            c.graph_format = choice(v, &[("dot", GraphFormat::Dot), ("json", GraphFormat::Json)])?;
            Some(())
        },
    },
    Key {
        name: "graph_tasks",
        accepts: "a task count N (the first N tasks) or a range A-B of task ids (T prefixes allowed)",
        apply: |c, v| {
            c.graph_tasks = Some(task_range(v)?);
            Some(())
        },
    },
    Key {
        name: "trace_file",
        accepts: "a non-empty file path",
        apply: |c, v| {
            c.trace_file = Some(non_empty_path(v)?);
            Some(())
        },
    },
    Key {
        name: "uninitialized_read",
        accepts: "ignore, log, error",
        apply: |c, v| {
            c.uninitialized_read = policy(v)?;
            Some(())
        },
    },
    Key {
        name: "overlapping_write",
        accepts: "ignore, log, error",
        apply: |c, v| {
            c.overlapping_write = policy(v)?;
            Some(())
        },
    },
    Key {
        name: "check_spmd",
        accepts: BOOLEAN_ACCEPTS,
        apply: |c, v| {
            c.check_spmd = boolean(v)?;
            Some(())
        },
    },
    Key {
        name: "accessor_boundary_check",
        accepts: "on/off, true/false, yes/no, 1/0 (any case), or a policy: ignore, log, error",
        apply: |c, v| {
            c.accessor_boundary_check = match boolean(v) {
                Some(true) => ErrorPolicy::Log,
                Some(false) => ErrorPolicy::Ignore,
                None => policy(v)?,
            };
            Some(())
        },
    },
    Key {
        name: "stall_timeout",
        accepts: "a number of seconds greater than 0 and at most 86400 (e.g. 20 or 0.5)",
        apply: |c, v| {
            c.stall_timeout = seconds(v)?;
            Some(())
        },
    },
    Key {
        name: "cuda_graphs",
        accepts: "auto, or a boolean: on/off, true/false, yes/no, 1/0 (any case)",
        apply: |c, v| {
            c.cuda_graphs = match boolean(v) {
                Some(true) => GraphCapture::All,
                Some(false) => GraphCapture::Off,
                None => choice(v, &[("auto", GraphCapture::LaunchOnly)])?,
            };
            Some(())
        },
    },
    Key {
        name: "pinned_memory_limit",
        accepts: "a byte count with an optional K, M, G or T suffix (binary), at most 1T (e.g. 4G)",
        apply: |c, v| {
            c.pinned_memory_limit = byte_count(v)?;
            Some(())
        },
    },
];

/// The environment variable that sets `key`.
pub fn env_var_name(key: &str) -> String {
    format!("CELERITY_{}", key.to_ascii_uppercase())
}

/// Levenshtein distance, for "did you mean" suggestions.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> &'a str {
    candidates
        .min_by_key(|candidate| edit_distance(name, candidate))
        .unwrap_or("")
}

impl Config {
    /// The defaults with this process's `CELERITY_*` variables applied, for programs that build
    /// their configuration in code (the benchmarks); a malformed variable is an error.
    pub fn from_environment() -> Result<Config> {
        ConfigBuilder::default()
            .build(environment()?)
            .map(|(config, _)| config)
    }
}

/// Explicitly set keys, in the order given; applied over the environment when the runtime starts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigBuilder {
    explicit: BTreeMap<&'static str, String>,
}

impl ConfigBuilder {
    /// Validates and records `key = value`. The argument names in messages are those of
    /// `celerity_config_set`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let Some(entry) = KEYS.iter().find(|k| k.name == key) else {
            let valid: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
            return Err(Error::invalid_argument(format!(
                "argument `key` (\"{key}\") is not a configuration key; did you mean \"{}\"? valid keys: {}",
                closest(key, valid.iter().copied()),
                valid.join(", ")
            )));
        };
        (entry.apply)(&mut Config::default(), value).ok_or_else(|| {
            Error::invalid_argument(format!(
                "argument `value` (\"{value}\") is not valid for key \"{key}\"; expected {}",
                entry.accepts
            ))
        })?;
        self.explicit.insert(entry.name, value.to_owned());
        Ok(())
    }

    /// The configuration from `environment` (name, value pairs, normally [`environment`])
    /// overridden by the explicit keys. Returns the configuration and warnings for unknown
    /// `CELERITY_*` variables; a malformed value of a known variable is an error.
    pub fn build(
        &self,
        environment: impl IntoIterator<Item = (String, String)>,
    ) -> Result<(Config, Vec<String>)> {
        let mut config = Config::default();
        let mut warnings = Vec::new();
        let mut from_env: BTreeMap<&'static str, (String, String)> = BTreeMap::new();
        for (name, value) in environment {
            let Some(suffix) = name.strip_prefix("CELERITY_") else {
                continue;
            };
            match KEYS
                .iter()
                .find(|k| k.name.eq_ignore_ascii_case(suffix) && env_var_name(k.name) == name)
            {
                Some(key) => {
                    from_env.insert(key.name, (name, value));
                }
                None => {
                    let names: Vec<String> = KEYS.iter().map(|k| env_var_name(k.name)).collect();
                    warnings.push(format!(
                        "unknown environment variable {name} ignored; did you mean {}?",
                        closest(&name, names.iter().map(String::as_str))
                    ));
                }
            }
        }
        for key in KEYS {
            if let Some(value) = self.explicit.get(key.name) {
                (key.apply)(&mut config, value)
                    .ok_or_else(|| Error::internal("validated key failed"))?;
            } else if let Some((name, value)) = from_env.get(key.name) {
                (key.apply)(&mut config, value).ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "environment variable {name}=\"{value}\" is not valid; expected {}",
                        key.accepts
                    ))
                })?;
            }
        }
        Ok((config, warnings))
    }
}

/// The process environment, read byte-wise: variables whose name or value is not UTF-8 are
/// skipped, unless the name starts with `CELERITY_` (then it is an error naming the variable),
/// so an unrelated variable in another encoding never stops the runtime from starting.
pub fn environment() -> Result<Vec<(String, String)>> {
    environment_from(std::env::vars_os())
}

fn environment_from(
    vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Result<Vec<(String, String)>> {
    let mut utf8 = Vec::new();
    for (name, value) in vars {
        match (name.into_string(), value.into_string()) {
            (Ok(name), Ok(value)) => utf8.push((name, value)),
            (name, value) => {
                let name = name.unwrap_or_else(|n| n.to_string_lossy().into_owned());
                if name.starts_with("CELERITY_") {
                    let value = value.unwrap_or_else(|v| format!("{v:?}"));
                    return Err(Error::invalid_argument(format!(
                        "environment variable {name}={value} is not valid UTF-8"
                    )));
                }
            }
        }
    }
    Ok(utf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_is_read_byte_wise() {
        use std::ffi::OsString;
        use std::os::unix::ffi::OsStringExt;
        let bytes = |b: &[u8]| OsString::from_vec(b.to_vec());
        let foreign = vec![
            (bytes(b"LANG_LATIN1"), bytes(b"caf\xe9")),
            (bytes(b"N\xe9ME"), bytes(b"x")),
            (bytes(b"CELERITY_LOG_LEVEL"), bytes(b"warn")),
        ];
        let read = environment_from(foreign).unwrap();
        assert_eq!(read, env(&[("CELERITY_LOG_LEVEL", "warn")]));
        let bad = vec![(bytes(b"CELERITY_DEVICES"), bytes(b"host\xff"))];
        let err = environment_from(bad).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        assert!(
            err.message().contains("CELERITY_DEVICES"),
            "{}",
            err.message()
        );
        assert!(
            err.message().contains("not valid UTF-8"),
            "{}",
            err.message()
        );
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|&(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    #[test]
    fn defaults_match_the_api_table() {
        let (config, warnings) = ConfigBuilder::default().build(env(&[])).unwrap();
        assert_eq!(config, Config::default());
        assert!(warnings.is_empty());
        assert_eq!(config.horizon_step, 4);
        assert_eq!(config.horizon_max_parallelism, 64);
        assert_eq!(config.lookahead, Lookahead::Auto);
        assert_eq!(config.uninitialized_read, ErrorPolicy::Log);
    }

    #[test]
    fn every_key_parses_its_documented_values() {
        let mut builder = ConfigBuilder::default();
        for (key, value) in [
            ("log_level", "debug"),
            ("devices", "host:4"),
            ("host_device_peer_copies", "off"),
            ("horizon_step", "2"),
            ("horizon_max_parallelism", "8"),
            ("lookahead", "infinite"),
            ("dry_run_nodes", "16"),
            ("print_graphs", "on"),
            ("graph_dir", "/tmp/graphs"),
            ("graph_format", "json"),
            ("trace_file", "t.json"),
            ("uninitialized_read", "error"),
            ("overlapping_write", "ignore"),
            ("stall_timeout", "2.5"),
            ("check_spmd", "off"),
            ("accessor_boundary_check", "error"),
            ("cuda_graphs", "on"),
        ] {
            builder.set(key, value).unwrap();
        }
        let (c, _) = builder.build(env(&[])).unwrap();
        assert_eq!(c.log_level, LogLevel::Debug);
        assert_eq!(c.devices, DeviceSelection::Host(4));
        assert!(!c.host_device_peer_copies);
        assert_eq!((c.horizon_step, c.horizon_max_parallelism), (2, 8));
        assert_eq!(c.lookahead, Lookahead::Infinite);
        assert_eq!(c.dry_run_nodes, Some(16));
        assert!(c.print_graphs);
        assert_eq!(
            (c.cuda_graphs, Config::default().cuda_graphs),
            (GraphCapture::All, GraphCapture::LaunchOnly)
        );
        assert_eq!(c.graph_dir, PathBuf::from("/tmp/graphs"));
        assert_eq!(c.graph_format, GraphFormat::Json);
        assert_eq!(c.trace_file, Some(PathBuf::from("t.json")));
        assert_eq!(c.uninitialized_read, ErrorPolicy::Error);
        assert_eq!(c.overlapping_write, ErrorPolicy::Ignore);
        assert_eq!(c.stall_timeout, Duration::from_millis(2500));
        assert!(!c.check_spmd);
        assert_eq!(Config::default().check_spmd, cfg!(debug_assertions));
        assert_eq!(c.accessor_boundary_check, ErrorPolicy::Error);
    }

    #[test]
    fn graph_tasks_takes_a_count_or_a_range() {
        for (value, expected) in [
            ("10", Some((0, 9))),
            ("1", Some((0, 0))),
            ("5-20", Some((5, 20))),
            ("T5-T20", Some((5, 20))),
            ("0", None),
            ("20-5", None),
            ("x", None),
        ] {
            let mut builder = ConfigBuilder::default();
            match expected {
                Some(range) => {
                    builder.set("graph_tasks", value).unwrap();
                    let (c, _) = builder.build(env(&[])).unwrap();
                    assert_eq!(c.graph_tasks, Some(range), "{value}");
                }
                None => assert!(builder.set("graph_tasks", value).is_err(), "{value}"),
            }
        }
    }

    #[test]
    fn accessor_boundary_check_takes_booleans_and_policies() {
        assert_eq!(Config::default().accessor_boundary_check, ErrorPolicy::Log);
        for (value, expected) in [
            ("off", ErrorPolicy::Ignore),
            ("0", ErrorPolicy::Ignore),
            ("ON", ErrorPolicy::Log),
            ("log", ErrorPolicy::Log),
            ("error", ErrorPolicy::Error),
            ("ignore", ErrorPolicy::Ignore),
        ] {
            let mut builder = ConfigBuilder::default();
            builder.set("accessor_boundary_check", value).unwrap();
            let (c, _) = builder.build(env(&[])).unwrap();
            assert_eq!(c.accessor_boundary_check, expected, "{value}");
        }
        let mut builder = ConfigBuilder::default();
        let err = builder
            .set("accessor_boundary_check", "sometimes")
            .unwrap_err();
        assert!(err.message().contains("sometimes"), "{}", err.message());
        assert!(err.message().contains("error"), "{}", err.message());
    }

    #[test]
    fn booleans_and_log_levels_take_celerity_spellings_in_any_case() {
        for (value, expected) in [
            ("1", true),
            ("0", false),
            ("TRUE", true),
            ("False", false),
            ("On", true),
            ("OFF", false),
            ("yes", true),
            ("No", false),
        ] {
            let (c, warnings) = ConfigBuilder::default()
                .build(env(&[("CELERITY_PRINT_GRAPHS", value)]))
                .unwrap();
            assert!(warnings.is_empty(), "{value}: {warnings:?}");
            assert_eq!(c.print_graphs, expected, "CELERITY_PRINT_GRAPHS={value}");
        }
        let error = ConfigBuilder::default()
            .set("print_graphs", "maybe")
            .unwrap_err();
        assert!(error.message().contains("yes/no"), "{}", error.message());
        for (value, expected) in [
            ("DEBUG", LogLevel::Debug),
            ("Warn", LogLevel::Warn),
            ("critical", LogLevel::Err),
            ("error", LogLevel::Err),
            ("OFF", LogLevel::Off),
        ] {
            let (c, _) = ConfigBuilder::default()
                .build(env(&[("CELERITY_LOG_LEVEL", value)]))
                .unwrap();
            assert_eq!(c.log_level, expected, "CELERITY_LOG_LEVEL={value}");
        }
    }

    #[test]
    fn stall_timeout_defaults_to_20_s_and_rejects_non_positive_values() {
        assert_eq!(Config::default().stall_timeout, Duration::from_secs(20));
        let mut builder = ConfigBuilder::default();
        for bad in ["0", "-1", "abc", "", "NaN", "inf", "86401"] {
            let error = builder.set("stall_timeout", bad).unwrap_err();
            assert!(
                error.message().contains("number of seconds"),
                "{bad}: {}",
                error.message()
            );
        }
        builder.set("stall_timeout", "1").unwrap();
        let (c, _) = builder.build(env(&[])).unwrap();
        assert_eq!(c.stall_timeout, Duration::from_secs(1));
        let (c, warnings) = ConfigBuilder::default()
            .build(env(&[("CELERITY_STALL_TIMEOUT", "0.25")]))
            .unwrap();
        assert!(warnings.is_empty());
        assert_eq!(c.stall_timeout, Duration::from_millis(250));
        let error = ConfigBuilder::default()
            .build(env(&[("CELERITY_STALL_TIMEOUT", "0")]))
            .unwrap_err();
        assert!(
            error.message().contains("CELERITY_STALL_TIMEOUT"),
            "{}",
            error.message()
        );
    }

    #[test]
    fn pinned_memory_limit_takes_byte_counts_with_binary_suffixes() {
        assert_eq!(Config::default().pinned_memory_limit, 4 << 30);
        let mut builder = ConfigBuilder::default();
        for bad in ["", "G", "-1", "1.5G", "2T", "4g", "99999999999999999999"] {
            let error = builder.set("pinned_memory_limit", bad).unwrap_err();
            assert!(
                error.message().contains("byte count"),
                "{bad}: {}",
                error.message()
            );
        }
        builder.set("pinned_memory_limit", "512M").unwrap();
        let (c, _) = builder.build(env(&[])).unwrap();
        assert_eq!(c.pinned_memory_limit, 512 << 20);
        let (c, _) = ConfigBuilder::default()
            .build(env(&[("CELERITY_PINNED_MEMORY_LIMIT", "0")]))
            .unwrap();
        assert_eq!(c.pinned_memory_limit, 0);
        let (c, _) = ConfigBuilder::default()
            .build(env(&[("CELERITY_PINNED_MEMORY_LIMIT", "1T")]))
            .unwrap();
        assert_eq!(c.pinned_memory_limit, 1 << 40);
    }

    #[test]
    fn bad_keys_and_values_name_the_valid_choices() {
        let mut builder = ConfigBuilder::default();
        let error = builder.set("horizon_stpe", "2").unwrap_err();
        assert!(
            error.message().contains("did you mean \"horizon_step\""),
            "{}",
            error.message()
        );
        let error = builder.set("devices", "host:0").unwrap_err();
        assert!(
            error.message().contains("\"host:0\""),
            "{}",
            error.message()
        );
        assert!(
            error.message().contains("auto, cuda, host, host:N"),
            "{}",
            error.message()
        );
        for (key, value) in [
            ("horizon_step", "0"),
            ("horizon_step", "-1"),
            ("lookahead", "sometimes"),
            ("graph_dir", ""),
        ] {
            assert!(builder.set(key, value).is_err(), "{key}={value}");
        }
        assert_eq!(
            builder,
            ConfigBuilder::default(),
            "failed sets change nothing"
        );
    }

    #[test]
    fn explicit_keys_win_over_the_environment_and_typos_warn() {
        let mut builder = ConfigBuilder::default();
        builder.set("horizon_step", "7").unwrap();
        let (config, warnings) = builder
            .build(env(&[
                ("CELERITY_HORIZON_STEP", "3"),
                ("CELERITY_LOOKAHEAD", "none"),
                ("CELERITY_LOOKAHAED", "none"),
                ("PATH", "/bin"),
            ]))
            .unwrap();
        assert_eq!(config.horizon_step, 7);
        assert_eq!(config.lookahead, Lookahead::None);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("did you mean CELERITY_LOOKAHEAD?"),
            "{}",
            warnings[0]
        );
    }

    #[test]
    fn a_malformed_environment_value_is_an_error() {
        let error = ConfigBuilder::default()
            .build(env(&[("CELERITY_DEVICES", "gpu")]))
            .unwrap_err();
        assert!(
            error.message().contains("CELERITY_DEVICES=\"gpu\""),
            "{}",
            error.message()
        );
    }
}
