//! The entry store behind [`RegionMap`](super::RegionMap): a flat list while the map fits one
//! R-tree leaf, the [R-tree](super::rtree) once it outgrows it.
//!
//! Most maps of the graph generators hold a handful of entries. A tree of a single leaf node is
//! already a list, but every question still goes through the tree's general machinery: recursive
//! descents, slots that may hold a subtree, the root's growth and shrinkage with its orphan
//! re-insertion. The list ([`Flat`]) holds the boxes and values side by side instead, and its
//! operations are plain scans, pushes and removals.
//!
//! The flat list is exactly the leaf the tree would be: an insertion appends, a removal moves the
//! last entry into the gap (the leaf's `swap_remove`), a box that shrinks or grows keeps its
//! place. So queries report entries in the same order as the one-leaf tree, and the tree built
//! when the list overflows (the full list as a leaf, then the tree's own insertion with its split)
//! is the tree the map would have had. The representation never changes what a map reports, only
//! what a question costs. Invariant: the root of [`EntryIndex`]'s tree is never a leaf (a tree that
//! shrinks to one leaf becomes a list again).

use smallvec::SmallVec;

use super::grid_box::GridBox;
use super::rtree::{MAX_CHILDREN, Node, NodeBoxes, Orphan, Slot};

/// Entries of a map that fits one leaf: `boxes[i]` holds `values[i]`.
#[derive(Clone)]
pub(crate) struct Flat<T> {
    /// The leaf's own box list type: it moves between a list and a leaf as it is (the values are
    /// rewrapped).
    pub boxes: NodeBoxes,
    pub values: SmallVec<[T; MAX_CHILDREN]>,
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
    /// At most [`MAX_CHILDREN`] entries, in the order of the tree's single leaf; empty while
    /// `tree` is set.
    flat: Flat<T>,
    /// An R-tree of at least two levels: a map that outgrew one leaf and has not shrunk back to one
    /// (it may hold fewer than [`MAX_CHILDREN`] entries by then).
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

    /// Number of levels of the index (1 for a flat list, which is one leaf).
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
    pub fn single_value_mut(&mut self) -> Option<&mut T> {
        match &self.tree {
            None => match self.flat.values.as_mut_slice() {
                [v] => Some(v),
                _ => None,
            },
            Some(_) => None,
        }
    }

    /// Calls `f` for every entry intersecting `q` (in the order of the tree's leaves).
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

    /// Adds an entry (disjoint from all others). A full list becomes a tree: its leaf, then the
    /// tree's insertion, which splits it.
    #[inline]
    pub fn insert(&mut self, b: GridBox, value: T) {
        match &mut self.tree {
            None if self.flat.boxes.len() < MAX_CHILDREN => {
                self.flat.boxes.push(b);
                self.flat.values.push(value);
            }
            None => self.overflow(b, value),
            Some(root) => Self::insert_slot(root, b, Slot::Value(value), 0),
        }
    }

    /// [`Self::insert`] into a full list: the list becomes a leaf, the tree's insertion splits it.
    fn overflow(&mut self, b: GridBox, value: T) {
        debug_assert!(self.tree.is_none(), "not a list");
        let boxes = std::mem::take(&mut self.flat.boxes);
        let values = std::mem::take(&mut self.flat.values);
        let mut leaf = Node::leaf(boxes, values);
        let sibling = leaf
            .insert(b, Slot::Value(value), 0)
            .expect("a full leaf splits");
        self.tree = Some(Box::new(Node::grow(leaf, sibling)));
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
    /// fall below the minimum fill and becomes a list again when it shrinks to one leaf.
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
    /// [`Node::bulk_load`], or the list that is its single leaf.
    pub fn bulk_load(mut entries: Vec<(GridBox, T)>) -> Self {
        if entries.len() > MAX_CHILDREN {
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
            boxes,
            values: values.collect(),
        }
    }

    /// Checks the structural invariants (tests only).
    #[cfg(test)]
    pub fn check(&self) {
        assert!(self.flat.boxes.len() <= MAX_CHILDREN);
        assert_eq!(self.flat.boxes.len(), self.flat.values.len());
        if let Some(root) = &self.tree {
            assert!(self.flat.boxes.is_empty(), "a tree leaves the list empty");
            assert!(root.height() > 0, "a one-leaf tree is kept as a list");
            root.check(true);
        }
    }
}
