//! The execution front: the instructions nothing depends on yet, which the next horizon or epoch
//! depends on.
//!
//! Every instruction enters the front when it is created and leaves it when another one comes
//! to depend on it; a horizon or epoch takes the whole front as its dependencies and becomes the
//! front alone. So the front only ever holds the last horizon or epoch and instructions created
//! after it, and since ids are handed out in order, it is a bit set over the ids from that
//! horizon or epoch on: an insertion or removal is a bit operation (a hash set hashed and probed
//! on every instruction created and every dependency added), and the front comes out in id order
//! without a sort.

use crate::types::InstructionId;

/// The set of instructions without dependents, as bits over the ids from `base` on.
#[derive(Debug, Default)]
pub(crate) struct ExecutionFront {
    /// The id of bit 0: the last horizon or epoch the front collapsed to (0 before the first).
    base: u64,
    /// Bit `i` of word `w`: whether id `base + 64 w + i` is in the front.
    words: Vec<u64>,
}

impl ExecutionFront {
    /// Adds `id`, which is not older than the last collapse.
    #[inline]
    pub fn insert(&mut self, id: InstructionId) {
        debug_assert!(id.0 >= self.base, "{id} is older than the front's base");
        let offset = (id.0 - self.base) as usize;
        let word = offset / 64;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (offset % 64);
    }

    /// Removes `id` if it is in the front (an id older than the last collapse never is).
    #[inline]
    pub fn remove(&mut self, id: InstructionId) {
        let Some(offset) = id.0.checked_sub(self.base) else {
            return;
        };
        let offset = offset as usize;
        if let Some(word) = self.words.get_mut(offset / 64) {
            *word &= !(1 << (offset % 64));
        }
    }

    /// The instructions of the front other than `id`, in id order; the front becomes `id` alone,
    /// which must be its newest instruction.
    pub fn collapse_to(&mut self, id: InstructionId) -> Vec<InstructionId> {
        let mut front = Vec::new();
        for (w, &bits) in self.words.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let i = bits.trailing_zeros() as u64;
                bits &= bits - 1;
                let member = InstructionId(self.base + 64 * w as u64 + i);
                if member != id {
                    debug_assert!(
                        member < id,
                        "{id} is not the newest instruction of the front"
                    );
                    front.push(member);
                }
            }
        }
        self.words.clear();
        self.base = id.0;
        self.insert(id);
        front
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    /// What the generator does with the front: create an instruction (it joins), add a dependency
    /// on an older one (it leaves), or collapse to a new horizon.
    #[derive(Debug, Clone)]
    enum Step {
        Create,
        Depend(u64),
        Collapse,
    }

    fn arb_step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => Just(Step::Create),
            4 => (0u64..400).prop_map(Step::Depend),
            1 => Just(Step::Collapse),
        ]
    }

    proptest! {
        /// Against an ordered set, over runs long enough to span several words.
        #[test]
        fn matches_an_ordered_set(steps in prop::collection::vec(arb_step(), 0..400)) {
            let mut front = ExecutionFront::default();
            let mut oracle: BTreeSet<u64> = BTreeSet::new();
            let mut next = 0u64;
            for step in steps {
                match step {
                    Step::Create => {
                        front.insert(InstructionId(next));
                        oracle.insert(next);
                        next += 1;
                    }
                    Step::Depend(back) => {
                        if next > 0 {
                            let to = next - 1 - back.min(next - 1);
                            front.remove(InstructionId(to));
                            oracle.remove(&to);
                        }
                    }
                    Step::Collapse => {
                        let horizon = next;
                        next += 1;
                        front.insert(InstructionId(horizon));
                        oracle.insert(horizon);
                        let got = front.collapse_to(InstructionId(horizon));
                        let expected: Vec<InstructionId> = oracle
                            .iter()
                            .filter(|&&i| i != horizon)
                            .map(|&i| InstructionId(i))
                            .collect();
                        prop_assert_eq!(got, expected);
                        oracle.clear();
                        oracle.insert(horizon);
                    }
                }
            }
            let last = InstructionId(next);
            front.insert(last);
            oracle.insert(next);
            let expected: Vec<InstructionId> =
                oracle.iter().filter(|&&i| i != next).map(|&i| InstructionId(i)).collect();
            prop_assert_eq!(front.collapse_to(last), expected);
        }
    }
}
