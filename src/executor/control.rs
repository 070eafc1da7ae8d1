//! Control messages between the executors of a distributed run, carried by
//! [`Communicator::broadcast_control`](crate::comm::Communicator::broadcast_control): failure
//! notices (fail-stop) and SPMD digests (divergence detection), and the comparison of digests.

use std::collections::HashMap;

use crate::error::{Error, ErrorKind};
use crate::task::spmd::{TaskDigest, first_divergence};
use crate::types::{NodeId, TaskId};

/// The longest failure text sent (longer ones are cut at a character boundary).
const FAILURE_TEXT_LIMIT: usize = 1024;

const FAILURE: u8 = 0;
const SPMD_DIGESTS: u8 = 1;

/// A decoded control message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlMessage {
    /// The sender failed with this error.
    Failure(Error),
    /// The hashes of the tasks the sender created in one comparison window.
    SpmdDigests {
        /// The window's index (windows are closed by horizons and epochs, in order).
        window: u64,
        /// One hash per task of the window, in creation order.
        hashes: Vec<u64>,
    },
}

impl ControlMessage {
    /// The wire form.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            ControlMessage::Failure(error) => {
                let mut text = error.message();
                if text.len() > FAILURE_TEXT_LIMIT {
                    let cut = (0..=FAILURE_TEXT_LIMIT)
                        .rev()
                        .find(|&i| text.is_char_boundary(i))
                        .unwrap_or(0);
                    text = &text[..cut];
                }
                let mut bytes = vec![FAILURE, error.kind().code()];
                bytes.extend_from_slice(text.as_bytes());
                bytes
            }
            ControlMessage::SpmdDigests { window, hashes } => {
                let mut bytes = vec![SPMD_DIGESTS];
                bytes.extend_from_slice(&window.to_le_bytes());
                for hash in hashes {
                    bytes.extend_from_slice(&hash.to_le_bytes());
                }
                bytes
            }
        }
    }

    /// The message of wire form `bytes`, or `None` for a malformed one.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        match *bytes.first()? {
            FAILURE => {
                let kind = ErrorKind::from_code(u64::from(*bytes.get(1)?));
                let text = String::from_utf8_lossy(&bytes[2..]).into_owned();
                Some(ControlMessage::Failure(Error::new(kind, text)))
            }
            SPMD_DIGESTS => {
                let rest = &bytes[1..];
                if rest.len() < 8 || rest.len() % 8 != 0 {
                    return None;
                }
                let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
                let mut words = rest.chunks_exact(8).map(word);
                let window = words.next()?;
                Some(ControlMessage::SpmdDigests {
                    window,
                    hashes: words.collect(),
                })
            }
            _ => None,
        }
    }
}

/// Compares this node's task digests with every peer's, window by window.
pub struct SpmdChecker {
    node: NodeId,
    num_nodes: usize,
    /// This node's windows not yet compared with every peer.
    mine: HashMap<u64, Vec<TaskDigest>>,
    /// Peers' windows that arrived before this node's, and how many peers compared per window.
    theirs: HashMap<u64, Vec<(NodeId, Vec<u64>)>>,
    compared: HashMap<u64, usize>,
    /// The task closing each window not yet compared with every peer.
    unsettled: HashMap<TaskId, u64>,
}

impl SpmdChecker {
    /// A checker for `node` of a `num_nodes`-node run.
    pub fn new(node: NodeId, num_nodes: usize) -> Self {
        Self {
            node,
            num_nodes,
            mine: HashMap::new(),
            theirs: HashMap::new(),
            compared: HashMap::new(),
            unsettled: HashMap::new(),
        }
    }

    /// Whether the window that `task` closes (if any) has been compared with every peer: an
    /// epoch completes only then, so that no wait returns before a divergence is found.
    pub fn is_settled(&self, task: TaskId) -> bool {
        !self.unsettled.contains_key(&task)
    }

    /// Records this node's window; returns the divergence from a peer whose window arrived first.
    pub fn record_mine(&mut self, window: u64, digests: Vec<TaskDigest>) -> Option<Error> {
        if let Some(last) = digests.last() {
            self.unsettled.insert(last.id, window);
        }
        self.mine.insert(window, digests);
        let early = self.theirs.remove(&window).unwrap_or_default();
        let mut divergence = None;
        for (peer, hashes) in early {
            divergence = divergence.or(self.compare(window, peer, &hashes));
        }
        divergence
    }

    /// Records a peer's window; returns the divergence if this node's window differs.
    pub fn record_theirs(&mut self, window: u64, peer: NodeId, hashes: Vec<u64>) -> Option<Error> {
        if self.mine.contains_key(&window) {
            self.compare(window, peer, &hashes)
        } else {
            self.theirs.entry(window).or_default().push((peer, hashes));
            None
        }
    }

    fn compare(&mut self, window: u64, peer: NodeId, hashes: &[u64]) -> Option<Error> {
        let mine = &self.mine[&window];
        let my_hashes: Vec<u64> = mine.iter().map(|d| d.hash).collect();
        let divergence = first_divergence(&my_hashes, hashes).map(|i| {
            let (me, them) = (self.node.0, peer.0);
            let here = match mine.get(i) {
                Some(d) => format!("here (rank {me}) task {} is {}", d.id, d.description),
                None => format!(
                    "rank {me} submitted only {} task(s) in this window, rank {them} more",
                    mine.len()
                ),
            };
            Error::invalid_state(format!(
                "SPMD divergence: the submissions of rank {me} and rank {them} differ at task {} of comparison window {window} (every rank must make the same sequence of calls); {here}",
                i + 1
            ))
        });
        let compared = self.compared.entry(window).or_default();
        *compared += 1;
        if *compared + 1 >= self.num_nodes {
            self.compared.remove(&window);
            if let Some(last) = self
                .mine
                .remove(&window)
                .and_then(|d| d.last().map(|d| d.id))
            {
                self.unsettled.remove(&last);
            }
        }
        divergence
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(id: u64, hash: u64) -> TaskDigest {
        TaskDigest {
            id: TaskId(id),
            hash,
            description: format!("task with hash {hash}"),
        }
    }

    #[test]
    fn control_messages_survive_encoding() {
        for message in [
            ControlMessage::Failure(Error::new(ErrorKind::TaskFailed, "rank 1: task T3 \"k\"")),
            ControlMessage::SpmdDigests {
                window: 7,
                hashes: vec![1, u64::MAX, 3],
            },
        ] {
            assert_eq!(ControlMessage::decode(&message.encode()), Some(message));
        }
        assert_eq!(ControlMessage::decode(&[9, 1, 2]), None);
        assert_eq!(ControlMessage::decode(&[SPMD_DIGESTS, 1, 2]), None);
        assert_eq!(ControlMessage::decode(&[]), None);
    }

    #[test]
    fn the_first_divergent_task_is_named_whichever_window_arrives_first() {
        let mut early = SpmdChecker::new(NodeId(0), 2);
        assert_eq!(early.record_theirs(0, NodeId(1), vec![10, 20]), None);
        assert_eq!(
            early.record_mine(0, vec![digest(1, 10), digest(2, 20)]),
            None
        );
        assert_eq!(early.record_theirs(1, NodeId(1), vec![30, 41]), None);
        let error = early
            .record_mine(1, vec![digest(3, 30), digest(4, 40)])
            .expect("window 1 differs");
        assert_eq!(error.kind(), ErrorKind::InvalidState);
        assert!(error.message().contains("rank 0 and rank 1"), "{error}");
        assert!(
            error.message().contains("task T4 is task with hash 40"),
            "{error}"
        );

        let mut late = SpmdChecker::new(NodeId(1), 2);
        late.record_mine(0, vec![digest(1, 10)]);
        let error = late
            .record_theirs(0, NodeId(0), vec![10, 99])
            .expect("extra task");
        assert!(error.message().contains("submitted only 1 task"), "{error}");
        assert!(late.mine.is_empty(), "compared windows are forgotten");
        assert!(late.is_settled(TaskId(1)));
        let mut three = SpmdChecker::new(NodeId(0), 3);
        three.record_mine(0, vec![digest(5, 50)]);
        assert!(!three.is_settled(TaskId(5)));
        three.record_theirs(0, NodeId(1), vec![50]);
        assert!(!three.is_settled(TaskId(5)), "rank 2 has not reported yet");
        three.record_theirs(0, NodeId(2), vec![50]);
        assert!(three.is_settled(TaskId(5)));
    }
}
