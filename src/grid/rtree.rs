//! The spatial index behind a [`RegionMap`](super::RegionMap) that outgrows its flat list (see
//! [`EntryIndex`](super::entry_index::EntryIndex)): an R-tree with 4
//! to 16 children per node, split in halves along the axis over which the children
//! spread most, whose leaves hold disjoint boxes with their values.
//!
//! Sixteen rather than eight children: a map of one entry per task (a soup of column writes)
//! splits a leaf every few inserts with eight, and a split costs more than scanning the wider
//! nodes on a query.
//!
//! Queries visit only the subtrees whose bounding boxes intersect the query,
//! so their cost grows with the number of entries found (times the depth),
//! not with the number of entries stored.

use smallvec::SmallVec;

use super::grid_box::{GridBox, bounding_box_of};

/// The most children (entries, in a leaf) a node holds.
pub(crate) const MAX_CHILDREN: usize = 16;
const MIN_CHILDREN: usize = 4;

/// The boxes of a node, with one spare slot for the overflow before a split.
pub(crate) type NodeBoxes = SmallVec<[GridBox; MAX_CHILDREN + 1]>;

/// A child of a node: a value in a leaf (height 0), a subtree otherwise.
#[derive(Clone)]
pub(crate) enum Slot<T> {
    Value(T),
    Node(Box<Node<T>>),
}

/// One tree node. `boxes[i]` is the entry box (leaf) or the bounding box of
/// subtree `slots[i]`; one spare capacity slot holds the overflow before a split.
#[derive(Clone)]
pub(crate) struct Node<T> {
    height: usize,
    boxes: NodeBoxes,
    slots: SmallVec<[Slot<T>; MAX_CHILDREN + 1]>,
}

/// An item waiting to be (re-)inserted into a node of the given height.
pub(crate) struct Orphan<T> {
    pub height: usize,
    pub bbox: GridBox,
    pub slot: Slot<T>,
}

/// Floating-point volume, used only for heuristics (cannot overflow).
#[inline]
fn volume(b: &GridBox) -> f64 {
    let r = b.range();
    r[0] as f64 * r[1] as f64 * r[2] as f64
}

impl<T> Node<T> {
    pub fn new_leaf() -> Self {
        Node {
            height: 0,
            boxes: SmallVec::new(),
            slots: SmallVec::new(),
        }
    }

    /// The entries of a leaf, boxes and values side by side.
    pub fn into_leaf(self) -> (NodeBoxes, impl Iterator<Item = T>) {
        debug_assert_eq!(self.height, 0);
        let values = self.slots.into_iter().map(|s| match s {
            Slot::Value(v) => v,
            Slot::Node(_) => unreachable!("leaf holds a subtree"),
        });
        (self.boxes, values)
    }

    #[inline]
    pub fn height(&self) -> usize {
        self.height
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.boxes.len()
    }

    #[inline]
    pub fn bbox(&self) -> GridBox {
        bounding_box_of(&self.boxes)
    }

    /// Calls `f` for every entry intersecting `q`.
    pub fn query<'a>(&'a self, q: &GridBox, f: &mut impl FnMut(&GridBox, &'a T)) {
        for (b, s) in self.boxes.iter().zip(&self.slots) {
            if b.intersects(q) {
                match s {
                    Slot::Value(v) => f(b, v),
                    Slot::Node(n) => n.query(q, f),
                }
            }
        }
    }

    /// Calls `f` for every entry intersecting `q`, with mutable access to its value (the same
    /// entries in the same order as [`Self::query`]; values may change, boxes may not).
    pub fn query_mut(&mut self, q: &GridBox, f: &mut impl FnMut(&GridBox, &mut T)) {
        for (b, s) in self.boxes.iter().zip(self.slots.iter_mut()) {
            if b.intersects(q) {
                match s {
                    Slot::Value(v) => f(b, v),
                    Slot::Node(n) => n.query_mut(q, f),
                }
            }
        }
    }

    /// The entry containing point `p`, if any.
    pub fn point_query(&self, p: &[usize; 3]) -> Option<(GridBox, &T)> {
        for (b, s) in self.boxes.iter().zip(&self.slots) {
            if b.contains(p) {
                match s {
                    Slot::Value(v) => return Some((*b, v)),
                    Slot::Node(n) => {
                        if let Some(hit) = n.point_query(p) {
                            return Some(hit);
                        }
                    }
                }
            }
        }
        None
    }

    pub fn for_each<'a>(&'a self, f: &mut impl FnMut(&GridBox, &'a T)) {
        for (b, s) in self.boxes.iter().zip(&self.slots) {
            match s {
                Slot::Value(v) => f(b, v),
                Slot::Node(n) => n.for_each(f),
            }
        }
    }

    pub fn for_each_mut(&mut self, f: &mut impl FnMut(&GridBox, &mut T)) {
        for (b, s) in self.boxes.iter().zip(self.slots.iter_mut()) {
            match s {
                Slot::Value(v) => f(b, v),
                Slot::Node(n) => n.for_each_mut(f),
            }
        }
    }

    /// Number of levels below and including this node.
    pub fn depth(&self) -> usize {
        self.height + 1
    }

    /// Inserts `slot` into the node of height `target` on the path of least
    /// enlargement. Returns the new sibling if this node had to split.
    pub fn insert(&mut self, bbox: GridBox, slot: Slot<T>, target: usize) -> Option<Box<Node<T>>> {
        debug_assert!(target <= self.height);
        if self.height == target {
            self.boxes.push(bbox);
            self.slots.push(slot);
        } else {
            let i = self.choose_child(&bbox);
            let Slot::Node(child) = &mut self.slots[i] else {
                unreachable!("inner node holds a value")
            };
            match child.insert(bbox, slot, target) {
                None => self.boxes[i] = self.boxes[i].bounding_box(&bbox),
                Some(sibling) => {
                    self.boxes[i] = child.bbox();
                    self.boxes.push(sibling.bbox());
                    self.slots.push(Slot::Node(sibling));
                }
            }
        }
        (self.len() > MAX_CHILDREN).then(|| self.split())
    }

    /// The child whose bounding box grows least (then: the smaller one).
    fn choose_child(&self, b: &GridBox) -> usize {
        let mut best = 0;
        let (mut best_enl, mut best_vol) = (f64::INFINITY, f64::INFINITY);
        for (i, cb) in self.boxes.iter().enumerate() {
            let vol = volume(cb);
            let enl = if cb.covers(b) {
                0.0
            } else {
                volume(&cb.bounding_box(b)) - vol
            };
            if enl < best_enl || (enl == best_enl && vol < best_vol) {
                best = i;
                (best_enl, best_vol) = (enl, vol);
            }
        }
        best
    }

    /// Splits an overflowing node in two halves along the axis over which the centres of its
    /// children spread most (ordered by centre): cheap, and for the tilings a region map holds
    /// it keeps neighbouring boxes together. Keeps one half here, returns the other.
    fn split(&mut self) -> Box<Node<T>> {
        let n = self.boxes.len();
        let centre2 = |b: &GridBox, d: usize| b.min_arr()[d] + b.max_arr()[d];
        let mut axis = 0;
        let mut best_spread = 0;
        for d in 0..3 {
            let (mut lo, mut hi) = (usize::MAX, 0);
            for b in &self.boxes {
                let c = centre2(b, d);
                lo = lo.min(c);
                hi = hi.max(c);
            }
            if hi - lo > best_spread {
                best_spread = hi - lo;
                axis = d;
            }
        }
        let mut order: SmallVec<[(usize, usize); MAX_CHILDREN + 1]> = self
            .boxes
            .iter()
            .enumerate()
            .map(|(i, b)| (centre2(b, axis), i))
            .collect();
        order.sort_unstable();
        let boxes: SmallVec<[GridBox; MAX_CHILDREN + 1]> = std::mem::take(&mut self.boxes);
        let mut slots: SmallVec<[Option<Slot<T>>; MAX_CHILDREN + 1]> =
            self.slots.drain(..).map(Some).collect();
        let mut other = Node {
            height: self.height,
            boxes: SmallVec::new(),
            slots: SmallVec::new(),
        };
        for (k, &(_, i)) in order.iter().enumerate() {
            let target = if k < n / 2 { &mut *self } else { &mut other };
            target.boxes.push(boxes[i]);
            target.slots.push(slots[i].take().expect("each item once"));
        }
        Box::new(other)
    }

    /// Replaces the box of the entry `old` by `new`, which must lie inside it, keeping the value,
    /// and tightens the bounding boxes on the way; returns `f` of the value (`None` if `old` is
    /// not an entry). Cheaper than erasing and re-inserting a shrunk entry.
    pub fn shrink_entry<R>(
        &mut self,
        old: &GridBox,
        new: GridBox,
        f: impl FnOnce(&T) -> R,
    ) -> Option<R> {
        self.shrink_entry_dyn(old, new, &mut Some(f))
    }

    /// [`Self::shrink_entry`] with the function taken out of `f` where the entry is found (so
    /// the recursion passes one reference, not the closure by value).
    fn shrink_entry_dyn<R, F: FnOnce(&T) -> R>(
        &mut self,
        old: &GridBox,
        new: GridBox,
        f: &mut Option<F>,
    ) -> Option<R> {
        debug_assert!(old.covers(&new) && !new.is_empty());
        for i in 0..self.boxes.len() {
            if !self.boxes[i].covers(old) {
                continue;
            }
            match &mut self.slots[i] {
                Slot::Value(v) => {
                    if self.boxes[i] == *old {
                        self.boxes[i] = new;
                        return Some(f.take().expect("entry found once")(v));
                    }
                }
                Slot::Node(child) => {
                    if let Some(r) = child.shrink_entry_dyn(old, new, f) {
                        self.boxes[i] = child.bbox();
                        return Some(r);
                    }
                }
            }
        }
        None
    }

    /// Replaces the box of the entry `old` by `new`, which must contain it, keeping the value, and
    /// widens the bounding boxes on the way (they stay exact: each grows by `new` alone). Returns
    /// false if `old` is not an entry. Cheaper than erasing and re-inserting a merged entry.
    pub fn grow_entry(&mut self, old: &GridBox, new: GridBox) -> bool {
        debug_assert!(new.covers(old));
        for i in 0..self.boxes.len() {
            if !self.boxes[i].covers(old) {
                continue;
            }
            let found = match &mut self.slots[i] {
                Slot::Value(_) => self.boxes[i] == *old,
                Slot::Node(child) => child.grow_entry(old, new),
            };
            if found {
                self.boxes[i] = self.boxes[i].bounding_box(&new);
                return true;
            }
        }
        false
    }

    /// Removes the entry whose box is exactly `b` and returns its value.
    /// Nodes that fall below the minimum fill are dissolved; their items are
    /// appended to `orphans` for re-insertion.
    pub fn erase(&mut self, b: &GridBox, orphans: &mut Vec<Orphan<T>>) -> Option<T> {
        for i in 0..self.boxes.len() {
            if !self.boxes[i].covers(b) {
                continue;
            }
            match &mut self.slots[i] {
                Slot::Value(_) => {
                    if self.boxes[i] == *b {
                        self.boxes.swap_remove(i);
                        let Slot::Value(v) = self.slots.swap_remove(i) else {
                            unreachable!()
                        };
                        return Some(v);
                    }
                }
                Slot::Node(child) => {
                    let Some(v) = child.erase(b, orphans) else {
                        continue;
                    };
                    if child.len() < MIN_CHILDREN {
                        self.boxes.swap_remove(i);
                        let Slot::Node(child) = self.slots.swap_remove(i) else {
                            unreachable!()
                        };
                        let child = *child;
                        for (bbox, slot) in child.boxes.into_iter().zip(child.slots) {
                            orphans.push(Orphan {
                                height: child.height,
                                bbox,
                                slot,
                            });
                        }
                    } else {
                        self.boxes[i] = child.bbox();
                    }
                    return Some(v);
                }
            }
        }
        None
    }

    /// Moves every entry of the subtree out, as (box, value) pairs.
    pub fn into_entries(self, out: &mut Vec<(GridBox, T)>) {
        for (b, s) in self.boxes.into_iter().zip(self.slots) {
            match s {
                Slot::Value(v) => out.push((b, v)),
                Slot::Node(n) => n.into_entries(out),
            }
        }
    }

    /// Moves the node's items out, as (box, slot) pairs.
    pub fn into_items(self, out: &mut Vec<(GridBox, Slot<T>)>) {
        out.extend(self.boxes.into_iter().zip(self.slots));
    }

    /// Takes the single child of an inner root, shrinking the tree by a level.
    pub fn take_only_child(&mut self) -> Option<Node<T>> {
        if self.height > 0 && self.len() == 1 {
            self.boxes.clear();
            match self.slots.pop() {
                Some(Slot::Node(n)) => Some(*n),
                _ => unreachable!("inner node holds a value"),
            }
        } else {
            None
        }
    }

    /// Makes a new root above `self` and `sibling`.
    pub fn grow(old_root: Node<T>, sibling: Box<Node<T>>) -> Node<T> {
        let mut root = Node {
            height: old_root.height + 1,
            boxes: SmallVec::new(),
            slots: SmallVec::new(),
        };
        root.boxes.push(old_root.bbox());
        root.slots.push(Slot::Node(Box::new(old_root)));
        root.boxes.push(sibling.bbox());
        root.slots.push(Slot::Node(sibling));
        root
    }

    /// Builds a tree over `items` (disjoint entry boxes with their values) in one pass: the items
    /// are sorted in coordinate order and packed level by level into evenly filled nodes of at most
    /// [`MAX_CHILDREN`] children (so every non-root node holds at least [`MIN_CHILDREN`]). Much
    /// cheaper than inserting them one by one; used when most of a map is rewritten at once.
    pub fn bulk_load(mut items: Vec<(GridBox, T)>) -> Node<T> {
        items.sort_unstable_by(|a, b| a.0.coordinate_order(&b.0));
        let mut level: Vec<(GridBox, Slot<T>)> = items
            .into_iter()
            .map(|(b, v)| (b, Slot::Value(v)))
            .collect();
        let mut height = 0;
        loop {
            let n = level.len();
            let groups = n.div_ceil(MAX_CHILDREN).max(1);
            let mut nodes: Vec<Node<T>> = Vec::with_capacity(groups);
            let mut it = level.into_iter();
            for g in 0..groups {
                // sizes differ by at most one
                let size = n / groups + usize::from(g < n % groups);
                let mut node = Node {
                    height,
                    boxes: SmallVec::new(),
                    slots: SmallVec::new(),
                };
                for (b, s) in it.by_ref().take(size) {
                    node.boxes.push(b);
                    node.slots.push(s);
                }
                nodes.push(node);
            }
            if groups == 1 {
                return nodes.pop().expect("one node");
            }
            level = nodes
                .into_iter()
                .map(|node| (node.bbox(), Slot::Node(Box::new(node))))
                .collect();
            height += 1;
        }
    }

    /// Checks the structural invariants (tests only): bounding boxes are exact,
    /// heights are consistent, non-root nodes hold [`MIN_CHILDREN`] to [`MAX_CHILDREN`] children.
    #[cfg(test)]
    pub fn check(&self, is_root: bool) {
        assert!(self.len() <= MAX_CHILDREN);
        assert!(is_root || self.len() >= MIN_CHILDREN, "underfull node");
        for (b, s) in self.boxes.iter().zip(&self.slots) {
            match s {
                Slot::Value(_) => assert_eq!(self.height, 0),
                Slot::Node(n) => {
                    assert_eq!(n.height + 1, self.height);
                    assert_eq!(*b, n.bbox());
                    n.check(false);
                }
            }
        }
    }
}
