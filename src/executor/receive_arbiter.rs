//! The receive arbiter: matches inbound pilots with posted receives, in any arrival order
//! (C++ Celerity: `receive_arbiter.cc`).
//!
//! A node learns what it will receive from its command graph, but the exact boxes and message
//! ids arrive in pilots, possibly before the receive instruction is issued and possibly after.
//! Per transfer id the arbiter keeps one of three states:
//!
//! * *unassigned*: pilots arrived before any receive; they wait here;
//! * *regions*: one or more receive requests (a plain receive, or a split receive whose
//!   subregions are awaited separately), plus pilots not yet matched;
//! * *gather*: one gather request expecting a pilot (possibly empty) from every peer.
//!
//! A pilot is matched with the request whose incomplete region contains its box, and its payload
//! is received straight into the request's allocation. Awaits complete once their region no
//! longer intersects the incomplete region; a request completes when everything arrived.
//!
//! Only transfers with payloads in flight can progress on their own, so polling visits those
//! alone: a program whose receives are posted thousands of tasks ahead must not pay for each of
//! them on every poll.

use crate::backend::SendPtr;
use crate::backend::event::{AsyncEvent, Completion, EventCompleter};
use crate::comm::{Communicator, InboundPilot, Stride};
use crate::error::{Error, ErrorKind, Result};
use crate::grid::{GridBox, Id, Range, Region, Subrange};
use crate::types::{IdMap, IdSet, MessageId, NodeId, TransferId};

struct Fragment {
    region_box: GridBox,
    from: NodeId,
    message: MessageId,
    event: AsyncEvent,
}

struct Waiter {
    region: Region,
    completer: EventCompleter,
}

struct RegionRequest {
    base: SendPtr,
    allocated_box: GridBox,
    elem_size: usize,
    incomplete: Region,
    fragments: Vec<Fragment>,
    waiters: Vec<Waiter>,
    failure: Option<Error>,
}

struct GatherRequest {
    base: SendPtr,
    chunk_bytes: usize,
    peers_outstanding: usize,
    /// Peers whose pilot arrived.
    heard_from: Vec<NodeId>,
    /// Payloads being received: sender, message and event.
    fragments: Vec<(NodeId, MessageId, AsyncEvent)>,
    waiter: Option<EventCompleter>,
    failure: Option<Error>,
}

enum Transfer {
    Unassigned(Vec<InboundPilot>),
    Regions {
        requests: Vec<RegionRequest>,
        unmatched: Vec<InboundPilot>,
    },
    Gather(GatherRequest),
}

/// What one transfer still waits for (see [`ReceiveArbiter::pending_transfers`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferStatus {
    /// The transfer.
    pub transfer: TransferId,
    /// Whether a receive (plain, split or gather) has been posted for it.
    pub receive_posted: bool,
    /// Payloads whose pilot arrived and that are being received: sender, message, box (empty
    /// for gather slots).
    pub payloads_outstanding: Vec<(NodeId, MessageId, GridBox)>,
    /// Pilots that arrived but match no posted receive (yet): sender, message, box.
    pub unmatched_pilots: Vec<(NodeId, MessageId, GridBox)>,
    /// The part of the posted regions that no pilot announced yet.
    pub missing_pilots_for: Region,
    /// Gathers: the peers whose pilot has not arrived.
    pub gather_peers_missing: Vec<NodeId>,
}

/// Matches pilots with receives for every transfer of one node.
#[derive(Default)]
pub struct ReceiveArbiter {
    transfers: IdMap<TransferId, Transfer>,
    /// The transfers with a payload being received: the only ones a poll has to visit.
    receiving: IdSet<TransferId>,
    /// Reused list of `receiving` while polling mutates it.
    visiting: Vec<TransferId>,
    /// How many times a transfer's state was examined (tests assert that polls stay cheap).
    #[cfg(test)]
    pub(crate) transfer_visits: usize,
}

fn communication_error(message: String) -> Error {
    Error::new(ErrorKind::Communication, message)
}

impl RegionRequest {
    fn new(
        base: *mut u8,
        allocated_box: GridBox,
        elem_size: usize,
        region: Region,
        waiters: Vec<Waiter>,
    ) -> Self {
        Self {
            base: SendPtr(base),
            allocated_box,
            elem_size,
            incomplete: region,
            fragments: Vec::new(),
            waiters,
            failure: None,
        }
    }

    /// Starts receiving the payload of `pilot` if this request is waiting for its box.
    fn try_accept(&mut self, comm: &mut dyn Communicator, pilot: &InboundPilot) -> Result<bool> {
        let region_box = pilot.message.region_box;
        if !self.incomplete.covers_box(&region_box) {
            return Ok(false);
        }
        let stride = Stride {
            allocation_range: self.allocated_box.range(),
            transfer: Subrange::new(
                Id(region_box.min().0) - self.allocated_box.min(),
                region_box.range(),
            ),
            elem_size: self.elem_size,
        };
        // SAFETY: the receive instruction's caller guaranteed that the allocation stays valid
        // and untouched until this request completes, which waits for every fragment event.
        let event =
            unsafe { comm.receive_payload(pilot.from, pilot.message.id, self.base.0, stride) }?;
        self.fragments.push(Fragment {
            region_box,
            from: pilot.from,
            message: pilot.message.id,
            event,
        });
        Ok(true)
    }

    /// Retires completed fragments and completes satisfied waiters. True when all arrived.
    fn progress(&mut self) -> bool {
        let mut index = 0;
        while index < self.fragments.len() {
            if self.fragments[index].event.is_complete() {
                let fragment = self.fragments.swap_remove(index);
                if let Some(Err(error)) = fragment.event.take_outcome() {
                    self.failure.get_or_insert(error);
                }
                self.incomplete = self.incomplete.difference_box(&fragment.region_box);
            } else {
                index += 1;
            }
        }
        let failure = self.failure.clone();
        let incomplete = &self.incomplete;
        self.waiters.retain_mut(|waiter| {
            if failure.is_none() && waiter.region.intersects(incomplete) {
                return true;
            }
            let completer = std::mem::replace(&mut waiter.completer, AsyncEvent::pending().1);
            completer.complete(failure.clone().map_or(Ok(Completion::Done), Err));
            false
        });
        (self.incomplete.is_empty() && self.fragments.is_empty()) || self.failure.is_some()
    }
}

impl GatherRequest {
    fn accept(&mut self, comm: &mut dyn Communicator, pilot: &InboundPilot) -> Result<()> {
        if self.peers_outstanding == 0 {
            return Err(communication_error(format!(
                "gather {} received more pilots than it has peers",
                pilot.message.transfer
            )));
        }
        self.peers_outstanding -= 1;
        self.heard_from.push(pilot.from);
        if pilot.message.region_box.is_empty() {
            return Ok(());
        }
        let slots = comm.num_nodes();
        let stride = Stride {
            allocation_range: Range::new(slots, 1, 1),
            transfer: Subrange::new(Id::new(pilot.from.0 as usize, 0, 0), Range::new(1, 1, 1)),
            elem_size: self.chunk_bytes,
        };
        // SAFETY: the gather allocation holds one chunk per node and stays valid until the
        // request completes (gather_receive's contract).
        let event =
            unsafe { comm.receive_payload(pilot.from, pilot.message.id, self.base.0, stride) }?;
        self.fragments.push((pilot.from, pilot.message.id, event));
        Ok(())
    }

    fn progress(&mut self) -> bool {
        self.fragments.retain(|(_, _, event)| {
            if !event.is_complete() {
                return true;
            }
            if let Some(Err(error)) = event.take_outcome() {
                self.failure.get_or_insert(error);
            }
            false
        });
        let done =
            (self.peers_outstanding == 0 && self.fragments.is_empty()) || self.failure.is_some();
        if done && let Some(waiter) = self.waiter.take() {
            waiter.complete(self.failure.clone().map_or(Ok(Completion::Done), Err));
        }
        done
    }
}

impl ReceiveArbiter {
    /// An arbiter with no transfers.
    pub fn new() -> Self {
        Self::default()
    }

    fn add_region_request(
        &mut self,
        comm: &mut dyn Communicator,
        transfer: TransferId,
        mut request: RegionRequest,
    ) -> Result<()> {
        let state = self
            .transfers
            .remove(&transfer)
            .unwrap_or(Transfer::Unassigned(Vec::new()));
        let (mut requests, pilots) = match state {
            Transfer::Unassigned(pilots) => (Vec::new(), pilots),
            Transfer::Regions {
                requests,
                unmatched,
            } => (requests, unmatched),
            Transfer::Gather(_) => {
                return Err(Error::internal(format!(
                    "transfer {transfer} is both a gather and a region receive"
                )));
            }
        };
        let mut unmatched = Vec::new();
        for pilot in pilots {
            if !request.try_accept(comm, &pilot)? {
                unmatched.push(pilot);
            }
        }
        requests.push(request);
        self.transfers.insert(
            transfer,
            Transfer::Regions {
                requests,
                unmatched,
            },
        );
        self.progress_transfer(transfer);
        Ok(())
    }

    /// Posts a receive of `region` of `transfer` into the allocation at `base`, which covers
    /// `allocated_box` of the buffer; the event completes when the whole region has arrived.
    ///
    /// # Safety
    /// `base` must be valid for writes of `allocated_box.area() * elem_size` bytes, and the
    /// region must not be accessed otherwise, until the event is complete.
    pub unsafe fn begin_receive(
        &mut self,
        comm: &mut dyn Communicator,
        transfer: TransferId,
        region: Region,
        base: *mut u8,
        allocated_box: GridBox,
        elem_size: usize,
    ) -> Result<AsyncEvent> {
        let (event, completer) = AsyncEvent::pending();
        let waiter = Waiter {
            region: region.clone(),
            completer,
        };
        let request = RegionRequest::new(base, allocated_box, elem_size, region, vec![waiter]);
        self.add_region_request(comm, transfer, request)?;
        Ok(event)
    }

    /// Posts a split receive: like [`Self::begin_receive`], but completion is observed through
    /// [`Self::await_split_receive_subregion`] for each reader's subregion.
    ///
    /// # Safety
    /// As for [`Self::begin_receive`], until every part of the region has arrived.
    pub unsafe fn begin_split_receive(
        &mut self,
        comm: &mut dyn Communicator,
        transfer: TransferId,
        region: Region,
        base: *mut u8,
        allocated_box: GridBox,
        elem_size: usize,
    ) -> Result<()> {
        let request = RegionRequest::new(base, allocated_box, elem_size, region, Vec::new());
        self.add_region_request(comm, transfer, request)
    }

    /// An event that completes once `subregion` of a split receive of `transfer` has arrived
    /// (at once if it already has).
    pub fn await_split_receive_subregion(
        &mut self,
        transfer: TransferId,
        subregion: Region,
    ) -> AsyncEvent {
        let (event, completer) = AsyncEvent::pending();
        let request = match self.transfers.get_mut(&transfer) {
            Some(Transfer::Regions { requests, .. }) => requests
                .iter_mut()
                .find(|r| r.incomplete.intersects(&subregion)),
            _ => None,
        };
        match request {
            Some(request) => request.waiters.push(Waiter {
                region: subregion,
                completer,
            }),
            None => completer.complete(Ok(Completion::Done)),
        }
        event
    }

    /// Posts a gather: one chunk of `chunk_bytes` from every peer into slot `[peer]` of the
    /// allocation at `base` (num_nodes × chunk_bytes). Peers without data send an empty pilot.
    ///
    /// # Safety
    /// `base` must be valid for writes of `num_nodes * chunk_bytes` bytes until the event is
    /// complete.
    pub unsafe fn gather_receive(
        &mut self,
        comm: &mut dyn Communicator,
        transfer: TransferId,
        base: *mut u8,
        chunk_bytes: usize,
    ) -> Result<AsyncEvent> {
        let (event, completer) = AsyncEvent::pending();
        let mut request = GatherRequest {
            base: SendPtr(base),
            chunk_bytes,
            peers_outstanding: comm.num_nodes() - 1,
            heard_from: Vec::new(),
            fragments: Vec::new(),
            waiter: Some(completer),
            failure: None,
        };
        match self.transfers.remove(&transfer) {
            None => {}
            Some(Transfer::Unassigned(pilots)) => {
                for pilot in &pilots {
                    request.accept(comm, pilot)?;
                }
            }
            Some(_) => {
                return Err(Error::internal(format!(
                    "transfer {transfer} is both a gather and a region receive"
                )));
            }
        }
        self.transfers.insert(transfer, Transfer::Gather(request));
        self.progress_transfer(transfer);
        Ok(event)
    }

    fn dispatch(&mut self, comm: &mut dyn Communicator, pilot: InboundPilot) -> Result<()> {
        let transfer = pilot.message.transfer;
        match self
            .transfers
            .entry(transfer)
            .or_insert_with(|| Transfer::Unassigned(Vec::new()))
        {
            Transfer::Unassigned(pilots) => pilots.push(pilot),
            Transfer::Regions {
                requests,
                unmatched,
            } => {
                let mut accepted = false;
                for request in requests.iter_mut() {
                    if request.try_accept(comm, &pilot)? {
                        accepted = true;
                        break;
                    }
                }
                if !accepted {
                    unmatched.push(pilot);
                }
            }
            Transfer::Gather(gather) => gather.accept(comm, &pilot)?,
        }
        Ok(())
    }

    /// Retires what arrived for `transfer` and keeps `receiving` up to date.
    fn progress_transfer(&mut self, transfer: TransferId) {
        #[cfg(test)]
        {
            self.transfer_visits += 1;
        }
        let (finished, in_flight) = match self.transfers.get_mut(&transfer) {
            Some(Transfer::Regions {
                requests,
                unmatched,
            }) => {
                requests.retain_mut(|request| !request.progress());
                let in_flight = requests.iter().any(|r| !r.fragments.is_empty());
                (requests.is_empty() && unmatched.is_empty(), in_flight)
            }
            Some(Transfer::Gather(gather)) => {
                let done = gather.progress();
                (done, !gather.fragments.is_empty())
            }
            _ => (false, false),
        };
        if finished {
            self.transfers.remove(&transfer);
        }
        if in_flight && !finished {
            self.receiving.insert(transfer);
        } else {
            self.receiving.remove(&transfer);
        }
    }

    /// Advances the communicator, dispatches new pilots and completes finished receives.
    pub fn poll_communicator(&mut self, comm: &mut dyn Communicator) -> Result<()> {
        comm.poll()?;
        for pilot in comm.poll_inbound_pilots()? {
            let transfer = pilot.message.transfer;
            self.dispatch(comm, pilot)?;
            // An empty gather pilot can complete its gather without a payload.
            self.progress_transfer(transfer);
        }
        let mut visiting = std::mem::take(&mut self.visiting);
        visiting.extend(self.receiving.iter().copied());
        for transfer in visiting.drain(..) {
            self.progress_transfer(transfer);
        }
        self.visiting = visiting;
        Ok(())
    }

    /// What every transfer with pending state still waits for, in transfer order (for the
    /// stall detector). `num_nodes` and `local` name the peers of a gather.
    pub fn pending_transfers(&self, num_nodes: usize, local: NodeId) -> Vec<TransferStatus> {
        let mut list: Vec<TransferStatus> = self
            .transfers
            .iter()
            .map(|(&transfer, state)| {
                let mut status = TransferStatus {
                    transfer,
                    receive_posted: true,
                    payloads_outstanding: Vec::new(),
                    unmatched_pilots: Vec::new(),
                    missing_pilots_for: Region::new(),
                    gather_peers_missing: Vec::new(),
                };
                let describe = |p: &InboundPilot| (p.from, p.message.id, p.message.region_box);
                match state {
                    Transfer::Unassigned(pilots) => {
                        status.receive_posted = false;
                        status.unmatched_pilots = pilots.iter().map(describe).collect();
                    }
                    Transfer::Regions {
                        requests,
                        unmatched,
                    } => {
                        status.unmatched_pilots = unmatched.iter().map(describe).collect();
                        for request in requests {
                            let mut missing = request.incomplete.clone();
                            for fragment in &request.fragments {
                                status.payloads_outstanding.push((
                                    fragment.from,
                                    fragment.message,
                                    fragment.region_box,
                                ));
                                missing = missing.difference_box(&fragment.region_box);
                            }
                            status.missing_pilots_for = status.missing_pilots_for.union(&missing);
                        }
                    }
                    Transfer::Gather(gather) => {
                        status.payloads_outstanding = gather
                            .fragments
                            .iter()
                            .map(|(from, message, _)| (*from, *message, GridBox::EMPTY))
                            .collect();
                        status.gather_peers_missing = (0..num_nodes as u64)
                            .map(NodeId)
                            .filter(|n| *n != local && !gather.heard_from.contains(n))
                            .collect();
                    }
                }
                status
            })
            .collect();
        list.sort_by_key(|s| s.transfer);
        list
    }

    /// Whether no transfer has pending state.
    pub fn is_idle(&self) -> bool {
        self.transfers.is_empty()
    }
}
