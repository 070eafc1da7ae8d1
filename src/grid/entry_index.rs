//! The entry store behind [`RegionMap`](super::RegionMap): a flat list while the map holds at
//! most [`FLAT_MAX`] entries, an [R-tree](super::rtree) once it outgrows that.
//!
//! Most maps of the graph generators hold a handful of entries, and many of the rest a few
//! dozen (a buffer written column by column, a 1-D buffer split over 16 devices). A tree of a
//! single leaf node is already a list, but every question still goes through the tree's general
//! machinery: recursive descents, slots that may hold a subtree, splits, the root's growth and
//! shrinkage with its orphan re-insertion; and a map of two levels finds an entry's merge partner
//! by up to six point probes from the root. The list ([`Flat`]) holds the boxes and values side by
//! side instead, and its operations are plain scans, pushes and removals: at a few dozen entries a
//! scan of all of them costs less than the descents.
//!
//! An insertion appends, a removal moves the last entry into the gap, a box that shrinks or grows
//! keeps its place. A list that overflows becomes a tree loaded in one pass; a tree that shrinks
//! to [`FLAT_RETURN`] entries (or to one leaf) becomes a list again, in the tree's order. Queries
//! of a list report entries in list order, so the order of a map of more than one leaf's entries
//! differs from the order a tree of the same entries would report; the point set and the values
//! of every answer do not depend on it. Invariant: the root of [`EntryIndex`]'s tree is never a
//! leaf, and a tree holds more than [`FLAT_RETURN`] entries (kept by
//! [`RegionMap`](super::RegionMap), which counts them).

use smallvec::SmallVec;

use super::grid_box::GridBox;
use super::rtree::{Node, Orphan, Slot};

/// The most entries a flat list holds; one more turns it into a tree.
pub(crate) const FLAT_MAX: usize = 32;

/// A tree that shrinks to this many entries becomes a list again: well below [`FLAT_MAX`], so a
/// map whose size hovers around the limit does not convert back and forth.
pub(crate) const FLAT_RETURN: usize = FLAT_MAX / 2;

/// How many entries a flat list holds inline (more spill to the heap). Every region map carries
/// this space, so it stays small: most maps hold a handful of entries.
const FLAT_INLINE: usize = 8;

/// Entries of a map of at most [`FLAT_MAX`] entries: `boxes[i]` holds `values[i]`.
#[derive(Clone)]
pub(crate) struct Flat<T> {
    pub boxes: SmallVec<[GridBox; FLAT_INLINE]>,
    pub values: SmallVec<[T; FLAT_INLINE]>,
}

/// The entries of a [`RegionMap`](super::RegionMap): disjoint boxes with their values.
///
/// A struct rather than an enum `Flat(Flat<T>) | Tree(Node<T>)`: with an enum, LLVM hoists the
/// list's slice set-up (the `SmallVec` capacity load and its spilled test, lowered to a branch)
/// above the variant test, and in a tree those bytes are a node's unused inline box slots, so
/// valgrind memcheck reports a conditional jump on uninitialised memory (harmless in the machine
/// code, but it would hide real errors). Here the list header is always initialised (an empty
/// list while the tree is in use), so speculative loads read defined bytes.
#[derive(Clone)]
pub(crate) struct EntryIndex<T> {
    /// At most [`FLAT_MAX`] entries; empty while `tree` is set.
    flat: Flat<T>,
    /// An R-tree of at least two levels: a map that outgrew the list and has not shrunk back to
    /// [`FLAT_RETURN`] entries.
    tree: Option<Box<Node<T>>>,
}

impl<T> Flat<T> {
    fn position(&self, b: &GridBox) -> Option<usize> {
        self.boxes.iter().position(|e| e == b)
    }
}

impl<T> Flat<T> {
    fn empty() -> Self {
        Flat {
            boxes: SmallVec::new(),
            values: SmallVec::new(),
        }
    }
}

impl<T> EntryIndex<T> {
    /// No entries.
    pub fn new() -> Self {
        EntryIndex {
            flat: Flat::empty(),
            tree: None,
        }
    }

    fn from_tree(root: Node<T>) -> Self {
        EntryIndex {
            flat: Flat::empty(),
            tree: Some(Box::new(root)),
        }
    }

    /// Number of levels of the index (1 for a flat list).
    pub fn depth(&self) -> usize {
        match &self.tree {
            None => 1,
            Some(root) => root.depth(),
        }
    }

    /// The entries of a flat list, `None` for a tree.
    #[inline]
    pub fn as_flat(&self) -> Option<&Flat<T>> {
        match &self.tree {
            None => Some(&self.flat),
            Some(_) => None,
        }
    }

    /// The value of the only entry.
    #[inline]
    pub fn single_value(&self) -> Option<&T> {
        let [v] = self.as_flat()?.values.as_slice() else {
            return None;
        };
        Some(v)
    }

    /// The value of the only entry, mutably.
    #[inline]
    pub fn single_value_mut(&mut self) -> Option<&mut T> {
        match &self.tree {
            None => match self.flat.values.as_mut_slice() {
                [v] => Some(v),
                _ => None,
            },
            Some(_) => None,
        }
    }

    /// Calls `f` for every entry intersecting `q` (in list order, or the order of the tree's
    /// leaves).
    #[inline]
    pub fn query<'a>(&'a self, q: &GridBox, f: &mut impl FnMut(&GridBox, &'a T)) {
        match &self.tree {
            None => {
                let flat = &self.flat;
                for (b, v) in flat.boxes.iter().zip(&flat.values) {
                    if b.intersects(q) {
                        f(b, v);
                    }
                }
            }
            Some(root) => root.query(q, f),
        }
    }

    /// Like [`Self::query`] with mutable access to the values (boxes may not change).
    #[inline]
    pub fn query_mut(&mut self, q: &GridBox, f: &mut impl FnMut(&GridBox, &mut T)) {
        match &mut self.tree {
            None => {
                let flat = &mut self.flat;
                for (b, v) in flat.boxes.iter().zip(flat.values.iter_mut()) {
                    if b.intersects(q) {
                        f(b, v);
                    }
                }
            }
            Some(root) => root.query_mut(q, f),
        }
    }

    /// The entry containing point `p`, if any.
    #[inline]
    pub fn point_query(&self, p: &[usize; 3]) -> Option<(GridBox, &T)> {
        match &self.tree {
            None => {
                let flat = &self.flat;
                flat.boxes
                    .iter()
                    .position(|b| b.contains(p))
                    .map(|i| (flat.boxes[i], &flat.values[i]))
            }
            Some(root) => root.point_query(p),
        }
    }

    /// Calls `f` for every entry.
    #[inline]
    pub fn for_each<'a>(&'a self, f: &mut impl FnMut(&GridBox, &'a T)) {
        match &self.tree {
            None => {
                for (b, v) in self.flat.boxes.iter().zip(&self.flat.values) {
                    f(b, v);
                }
            }
            Some(root) => root.for_each(f),
        }
    }

    /// Calls `f` for every entry, with mutable access to its value.
    #[inline]
    pub fn for_each_mut(&mut self, f: &mut impl FnMut(&GridBox, &mut T)) {
        match &mut self.tree {
            None => {
                let flat = &mut self.flat;
                for (b, v) in flat.boxes.iter().zip(flat.values.iter_mut()) {
                    f(b, v);
                }
            }
            Some(root) => root.for_each_mut(f),
        }
    }

    /// Adds an entry (disjoint from all others). A full list becomes a tree.
    #[inline]
    pub fn insert(&mut self, b: GridBox, value: T) {
        match &mut self.tree {
            None if self.flat.boxes.len() < FLAT_MAX => {
                self.flat.boxes.push(b);
                self.flat.values.push(value);
            }
            None => self.overflow(b, value),
            Some(root) => Self::insert_slot(root, b, Slot::Value(value), 0),
        }
    }

    /// [`Self::insert`] into a full list: the list and the new entry are loaded into a tree.
    fn overflow(&mut self, b: GridBox, value: T) {
        debug_assert!(self.tree.is_none(), "not a list");
        let boxes = std::mem::take(&mut self.flat.boxes);
        let values = std::mem::take(&mut self.flat.values);
        let mut entries = Vec::with_capacity(FLAT_MAX + 1);
        entries.extend(boxes.into_iter().zip(values));
        entries.push((b, value));
        self.tree = Some(Box::new(Node::bulk_load(entries)));
    }

    /// Turns a tree back into a list (in the order of its leaves); a list stays as it is. The
    /// caller keeps the list within [`FLAT_MAX`] entries.
    pub fn flatten(&mut self) {
        if let Some(root) = self.tree.take() {
            let mut entries = Vec::with_capacity(FLAT_MAX);
            root.into_entries(&mut entries);
            debug_assert!(entries.len() <= FLAT_MAX);
            (self.flat.boxes, self.flat.values) = entries.into_iter().unzip();
        }
    }

    /// Inserts into the tree at the node height `target`, growing the root if it splits.
    fn insert_slot(root: &mut Node<T>, b: GridBox, slot: Slot<T>, target: usize) {
        if let Some(sibling) = root.insert(b, slot, target) {
            let old = std::mem::replace(root, Node::new_leaf());
            *root = Node::grow(old, sibling);
        }
    }

    /// Removes the entry whose box is exactly `b` and returns its value (`None` if there is none).
    /// In a list the last entry moves into the gap; a tree re-inserts the items of the nodes that
    /// fall below the minimum fill and becomes a list again when it shrinks to one leaf (the
    /// caller flattens it at [`FLAT_RETURN`] entries).
    #[inline]
    pub fn erase(&mut self, b: &GridBox, orphans: &mut Vec<Orphan<T>>) -> Option<T> {
        match &self.tree {
            None => {
                let flat = &mut self.flat;
                let i = flat.position(b)?;
                flat.boxes.swap_remove(i);
                Some(flat.values.swap_remove(i))
            }
            Some(_) => self.erase_from_tree(b, orphans),
        }
    }

    /// [`Self::erase`] for a tree.
    fn erase_from_tree(&mut self, b: &GridBox, orphans: &mut Vec<Orphan<T>>) -> Option<T> {
        let Some(root) = self.tree.as_deref_mut() else {
            unreachable!("not a tree")
        };
        let v = root.erase(b, orphans)?;
        while let Some(child) = root.take_only_child() {
            *root = child;
        }
        if root.height() > 0 && root.len() == 0 {
            *root = Node::new_leaf();
        }
        while let Some(o) = orphans.pop() {
            if o.height > root.height() {
                // the tree shrank below the orphan's level: re-insert its children
                let Slot::Node(n) = o.slot else {
                    unreachable!("value orphan above leaf level")
                };
                let n = *n;
                let h = n.height();
                let mut items = Vec::new();
                n.into_items(&mut items);
                for (bbox, slot) in items {
                    orphans.push(Orphan {
                        height: h,
                        bbox,
                        slot,
                    });
                }
            } else {
                Self::insert_slot(root, o.bbox, o.slot, o.height);
            }
        }
        if root.height() == 0 {
            let leaf = self.tree.take().expect("a tree");
            self.flat = Self::flat_from_leaf(*leaf);
        }
        Some(v)
    }

    /// Replaces the box of the entry `old` by `new`, which lies inside it, keeping the value and
    /// the entry's place; returns `f` of the value (`None` if `old` is not an entry).
    #[inline]
    pub fn shrink_entry<R>(
        &mut self,
        old: &GridBox,
        new: GridBox,
        f: impl FnOnce(&T) -> R,
    ) -> Option<R> {
        match &mut self.tree {
            None => {
                debug_assert!(old.covers(&new) && !new.is_empty());
                let flat = &mut self.flat;
                let i = flat.position(old)?;
                flat.boxes[i] = new;
                Some(f(&flat.values[i]))
            }
            Some(root) => root.shrink_entry(old, new, f),
        }
    }

    /// Replaces the box of the entry `old` by `new`, which contains it, keeping the value and the
    /// entry's place. Returns false if `old` is not an entry.
    #[inline]
    pub fn grow_entry(&mut self, old: &GridBox, new: GridBox) -> bool {
        match &mut self.tree {
            None => {
                debug_assert!(new.covers(old));
                let Some(i) = self.flat.position(old) else {
                    return false;
                };
                self.flat.boxes[i] = new;
                true
            }
            Some(root) => root.grow_entry(old, new),
        }
    }

    /// Moves every entry out, as (box, value) pairs.
    pub fn into_entries(self, out: &mut Vec<(GridBox, T)>) {
        match self.tree {
            None => out.extend(self.flat.boxes.into_iter().zip(self.flat.values)),
            Some(root) => root.into_entries(out),
        }
    }

    /// An index over `entries` (disjoint boxes) in coordinate order, built in one pass:
    /// [`Node::bulk_load`], or a list of at most [`FLAT_MAX`] entries.
    pub fn bulk_load(mut entries: Vec<(GridBox, T)>) -> Self {
        if entries.len() > FLAT_MAX {
            return Self::from_tree(Node::bulk_load(entries));
        }
        entries.sort_unstable_by(|a, b| a.0.coordinate_order(&b.0));
        let (boxes, values) = entries.into_iter().unzip();
        EntryIndex {
            flat: Flat { boxes, values },
            tree: None,
        }
    }

    fn flat_from_leaf(leaf: Node<T>) -> Flat<T> {
        let (boxes, values) = leaf.into_leaf();
        Flat {
            boxes: boxes.into_iter().collect(),
            values: values.collect(),
        }
    }

    /// Checks the structural invariants (tests only).
    #[cfg(test)]
    pub fn check(&self) {
        assert!(self.flat.boxes.len() <= FLAT_MAX);
        assert_eq!(self.flat.boxes.len(), self.flat.values.len());
        if let Some(root) = &self.tree {
            assert!(self.flat.boxes.is_empty(), "a tree leaves the list empty");
            assert!(root.height() > 0, "a one-leaf tree is kept as a list");
            root.check(true);
        }
    }
}
