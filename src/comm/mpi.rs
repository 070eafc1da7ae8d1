//! The MPI communicator (rsmpi; C++ Celerity: `mpi_communicator.cc`).
//!
//! * The runtime initialises MPI with `MPI_THREAD_MULTIPLE` unless the program already did
//!   (collective host tasks call MPI on lane threads), and finalises it only if it initialised it.
//! * Each communicator works on its own duplicate of its parent (`MPI_Comm_dup`), so the
//!   runtime's traffic never matches the program's own messages.
//! * Pilots are fixed-size byte messages on tag 0. One `MPI_Irecv(MPI_ANY_SOURCE)` is kept posted
//!   and re-posted after every pilot; pilot sends are kept until they test complete.
//! * Payloads use tag `1 + id mod (INT_MAX - 1)` and an `MPI_Type_create_subarray` datatype over
//!   the allocation, so data moves straight between the allocations without staging. Strides
//!   are normalised first (the dimension-0 offset folds into the base pointer and the
//!   dimension-0 extent is clamped to the transfer) so that more boxes fit `int` coordinates;
//!   datatypes are cached.
//! * Requests are polled with `MPI_Test` in [`Communicator::poll`]. Dropping a communicator waits
//!   for its outstanding sends, cancels its pilot receive and frees the duplicate.

use std::collections::HashMap;
use std::ffi::c_int;
use std::mem::MaybeUninit;

use mpi::ffi;

use super::{
    CONTROL_MESSAGE_LIMIT, CPU_MASK_WORDS, Communicator, CpuMask, HostPlacement, InboundPilot,
    OutboundPilot, PilotMessage, Stride,
};
use crate::backend::event::{AsyncEvent, Completion, EventCompleter};
use crate::error::{Error, ErrorKind, Result};
use crate::grid::GridBox;
use crate::types::{BufferId, MessageId, NodeId, ReductionId, TaskId, TransferId};

/// The MPI library's identification string (`MPI_Get_library_version`), which may be queried
/// before MPI is initialised.
pub fn library_version() -> Result<String> {
    mpi::environment::library_version()
        .map(|v| v.trim_end_matches(['\0', '\n', ' ']).to_owned())
        .map_err(|e| comm_error(format!("MPI_Get_library_version: {e}")))
}

/// Ends every process of the job (`MPI_Abort` on `MPI_COMM_WORLD`) with exit code `code`: the
/// last resort when a shutdown cannot finish because a peer failed or is gone.
pub fn abort_job(code: c_int) -> ! {
    // MPI_Abort can itself block (seen with Open MPI 4.1 when every rank aborts at once): the
    // process then ends by itself a little later, which the launcher also turns into the end of
    // the job.
    let _ = std::thread::Builder::new()
        .name("celerity-abort-backstop".into())
        .spawn(|| {
            std::thread::sleep(std::time::Duration::from_secs(5));
            eprintln!("celerity: MPI_Abort did not end the process within 5 s; aborting it");
            std::process::abort();
        });
    // SAFETY: MPI is initialised while a runtime exists (the only caller's situation);
    // MPI_Abort may be called from any thread under MPI_THREAD_MULTIPLE.
    unsafe { ffi::MPI_Abort(ffi::RSMPI_COMM_WORLD, code) };
    std::process::exit(code)
}

fn comm_error(message: String) -> Error {
    Error::new(ErrorKind::Communication, message)
}

/// A communicator that `create` writes into its argument (the MPI call `call`, for the error).
fn new_communicator(
    call: &str,
    create: impl FnOnce(*mut ffi::MPI_Comm) -> c_int,
) -> Result<ffi::MPI_Comm> {
    let mut comm = MaybeUninit::<ffi::MPI_Comm>::uninit();
    check(create(comm.as_mut_ptr()), call)?;
    // SAFETY: the call succeeded, so it wrote the new communicator.
    Ok(unsafe { comm.assume_init() })
}

/// This process's rank in `comm`, a valid communicator, and its size.
fn rank_and_size(comm: ffi::MPI_Comm) -> Result<(c_int, c_int)> {
    let (mut rank, mut size) = (0, 0);
    // SAFETY: `comm` is valid; the out-pointers are valid ints.
    unsafe {
        check(ffi::MPI_Comm_rank(comm, &mut rank), "MPI_Comm_rank")?;
        check(ffi::MPI_Comm_size(comm, &mut size), "MPI_Comm_size")?;
    }
    Ok((rank, size))
}

fn check(code: c_int, what: &str) -> Result<()> {
    if code == ffi::MPI_SUCCESS as c_int {
        Ok(())
    } else {
        Err(comm_error(format!(
            "{what} failed with MPI error code {code}"
        )))
    }
}

/// Ownership of the MPI library for one run.
pub struct MpiEnvironment {
    /// Present when the runtime initialised MPI; dropping it finalises MPI.
    universe: Option<mpi::environment::Universe>,
}

impl MpiEnvironment {
    /// Initialises MPI with `MPI_THREAD_MULTIPLE` unless the program already did. Returns an error
    /// when the library cannot provide `MPI_THREAD_MULTIPLE`.
    pub fn init() -> Result<Self> {
        let universe = match mpi::initialize_with_threading(mpi::Threading::Multiple) {
            Some((universe, provided)) => {
                if provided != mpi::Threading::Multiple {
                    return Err(comm_error(format!(
                        "the MPI library provides thread level {provided:?}, celerity needs MPI_THREAD_MULTIPLE"
                    )));
                }
                Some(universe)
            }
            None => {
                let provided = mpi::environment::threading_support();
                if provided != mpi::Threading::Multiple {
                    return Err(comm_error(format!(
                        "MPI was initialised by the program with thread level {provided:?}; celerity needs MPI_THREAD_MULTIPLE (use MPI_Init_thread)"
                    )));
                }
                None
            }
        };
        Ok(Self { universe })
    }

    /// Whether the runtime owns (and will finalise) MPI.
    pub fn owns_mpi(&self) -> bool {
        self.universe.is_some()
    }

    /// A communicator over all processes (a duplicate of `MPI_COMM_WORLD`).
    pub fn world(&self) -> Result<MpiCommunicator> {
        // SAFETY: RSMPI_COMM_WORLD is a valid communicator while MPI is initialised, which
        // holding `self` guarantees.
        MpiCommunicator::duplicate(unsafe { ffi::RSMPI_COMM_WORLD })
    }
}

const PILOT_TAG: c_int = 0;
const PILOT_WORDS: usize = 10;
/// Word 0 of a control message's header (no message id reaches it); word 1 holds its length.
/// The message follows in pilot-sized chunks on the pilot tag, so MPI's non-overtaking order puts
/// it before every later pilot of the sender.
const CONTROL_HEADER: u64 = u64::MAX;
const PILOT_BYTES: usize = PILOT_WORDS * 8;

/// A control message being received: its announced length and the bytes so far.
struct IncomingControl {
    len: usize,
    bytes: Vec<u8>,
}

fn encode_pilot(message: &PilotMessage) -> [u64; PILOT_WORDS] {
    let (min, max) = (message.region_box.min().0, message.region_box.max().0);
    [
        message.id.0,
        message.transfer.consumer.0,
        message.transfer.buffer.0,
        message.transfer.reduction.0,
        min[0] as u64,
        min[1] as u64,
        min[2] as u64,
        max[0] as u64,
        max[1] as u64,
        max[2] as u64,
    ]
}

fn decode_pilot(words: &[u64; PILOT_WORDS]) -> PilotMessage {
    let coordinate = |i: usize| words[i] as usize;
    PilotMessage {
        id: MessageId(words[0]),
        transfer: TransferId {
            consumer: TaskId(words[1]),
            buffer: BufferId(words[2]),
            reduction: ReductionId(words[3]),
        },
        region_box: GridBox::from_arrays(
            [coordinate(4), coordinate(5), coordinate(6)],
            [coordinate(7), coordinate(8), coordinate(9)],
        ),
    }
}

fn payload_tag(id: MessageId) -> c_int {
    1 + (id.0 % (c_int::MAX as u64 - 1)) as c_int
}

/// A stride in MPI's `int` coordinates, after normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct SubarrayKey {
    elem_size: usize,
    sizes: [c_int; 3],
    subsizes: [c_int; 3],
    starts: [c_int; 3],
}

/// Normalises `stride` and returns the byte offset to add to the base pointer and the subarray
/// description.
fn normalise_stride(stride: &Stride) -> Result<(usize, SubarrayKey)> {
    let allocation = stride.allocation_range.0;
    let offset = stride.transfer.offset.0;
    let range = stride.transfer.range.0;
    // Fold the dimension-0 offset into the base pointer and clamp dimension 0 to the transfer.
    let plane_bytes = allocation[1] * allocation[2] * stride.elem_size;
    let base_offset = offset[0] * plane_bytes;
    let sizes = [range[0], allocation[1], allocation[2]];
    let starts = [0, offset[1], offset[2]];
    let to_int = |v: usize, what: &str| {
        c_int::try_from(v).map_err(|_| {
            comm_error(format!(
                "{what} {v} of a transfer of {stride:?} exceeds MPI's int coordinates (the instruction graph must split such transfers)"
            ))
        })
    };
    let key = SubarrayKey {
        elem_size: stride.elem_size,
        sizes: [
            to_int(sizes[0], "extent")?,
            to_int(sizes[1], "extent")?,
            to_int(sizes[2], "extent")?,
        ],
        subsizes: [
            to_int(range[0], "range")?,
            to_int(range[1], "range")?,
            to_int(range[2], "range")?,
        ],
        starts: [
            to_int(starts[0], "offset")?,
            to_int(starts[1], "offset")?,
            to_int(starts[2], "offset")?,
        ],
    };
    to_int(stride.elem_size, "element size")?;
    Ok((base_offset, key))
}

/// How long [`Communicator::abandon_transfers`] waits for cancelled and outstanding transfers.
const ABANDON_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// Most cached datatypes before the cache is flushed (MPI keeps freed types alive for the
/// requests still using them).
const DATATYPE_CACHE_LIMIT: usize = 4096;

/// One node's communicator over MPI.
pub struct MpiCommunicator {
    comm: ffi::MPI_Comm,
    rank: usize,
    size: usize,
    /// The posted pilot receive and its buffer (boxed: MPI writes into it asynchronously).
    pilot_receive: ffi::MPI_Request,
    pilot_buffer: Box<[u64; PILOT_WORDS]>,
    /// Pilot sends in flight with their buffers.
    pilot_sends: Vec<(ffi::MPI_Request, Box<[u64; PILOT_WORDS]>)>,
    /// Payload sends and receives in flight.
    payloads: Vec<(ffi::MPI_Request, PayloadDirection, EventCompleter)>,
    received_pilots: Vec<InboundPilot>,
    datatypes: HashMap<SubarrayKey, ffi::MPI_Datatype>,
    /// Control messages being received, by sender rank, and those complete.
    incoming_control: HashMap<usize, IncomingControl>,
    control_messages: Vec<(NodeId, Vec<u8>)>,
}

// SAFETY: the communicator owns its MPI handles exclusively; MPI is initialised with
// MPI_THREAD_MULTIPLE, so using them from whichever single thread owns the communicator is allowed.
unsafe impl Send for MpiCommunicator {}

impl MpiCommunicator {
    /// The processes on this host (`MPI_Comm_split_type` shared), as a new communicator the
    /// caller frees. Collective over `self.comm`: every rank calls it at start-up.
    fn host_local_comm(&self) -> Result<ffi::MPI_Comm> {
        new_communicator("MPI_Comm_split_type", |out| {
            // SAFETY: `self.comm` is a valid communicator; MPI writes the new one into `out`.
            unsafe {
                ffi::MPI_Comm_split_type(
                    self.comm,
                    ffi::RSMPI_COMM_TYPE_SHARED,
                    self.rank as c_int,
                    ffi::RSMPI_INFO_NULL,
                    out,
                )
            }
        })
    }

    fn duplicate(parent: ffi::MPI_Comm) -> Result<Self> {
        let comm = new_communicator("MPI_Comm_dup", |out| {
            // SAFETY: `parent` is a valid communicator; MPI writes the duplicate into `out`.
            unsafe { ffi::MPI_Comm_dup(parent, out) }
        })?;
        let (rank, size) = rank_and_size(comm)?;
        let mut this = Self {
            comm,
            rank: rank as usize,
            size: size as usize,
            // SAFETY: reading an extern constant of the MPI library.
            pilot_receive: unsafe { ffi::RSMPI_REQUEST_NULL },
            pilot_buffer: Box::new([0; PILOT_WORDS]),
            pilot_sends: Vec::new(),
            payloads: Vec::new(),
            received_pilots: Vec::new(),
            datatypes: HashMap::new(),
            incoming_control: HashMap::new(),
            control_messages: Vec::new(),
        };
        this.post_pilot_receive()?;
        Ok(this)
    }

    fn post_pilot_receive(&mut self) -> Result<()> {
        check(
            // SAFETY: the buffer is boxed and lives in `self` until the request completes or is
            // cancelled in Drop; the count and type describe exactly its bytes.
            unsafe {
                ffi::MPI_Irecv(
                    self.pilot_buffer.as_mut_ptr().cast(),
                    (PILOT_WORDS * 8) as c_int,
                    ffi::RSMPI_UINT8_T,
                    ffi::RSMPI_ANY_SOURCE,
                    PILOT_TAG,
                    self.comm,
                    &mut self.pilot_receive,
                )
            },
            "MPI_Irecv (pilot)",
        )
    }

    /// Tests `request`; true (and the request reset) when it has completed.
    fn test(
        request: &mut ffi::MPI_Request,
        status: &mut MaybeUninit<ffi::MPI_Status>,
    ) -> Result<bool> {
        let mut flag = 0;
        check(
            // SAFETY: `request` is an active request of this process; `status` has room for a status.
            unsafe { ffi::MPI_Test(request, &mut flag, status.as_mut_ptr()) },
            "MPI_Test",
        )?;
        Ok(flag != 0)
    }

    fn datatype(&mut self, key: SubarrayKey) -> Result<ffi::MPI_Datatype> {
        if let Some(&datatype) = self.datatypes.get(&key) {
            return Ok(datatype);
        }
        if self.datatypes.len() >= DATATYPE_CACHE_LIMIT {
            self.free_datatypes();
        }
        let mut element = MaybeUninit::<ffi::MPI_Datatype>::uninit();
        let mut subarray = MaybeUninit::<ffi::MPI_Datatype>::uninit();
        // SAFETY: plain datatype constructors with valid arguments and out-pointers; the
        // element type is freed once the subarray type holds its own reference.
        unsafe {
            check(
                ffi::MPI_Type_contiguous(
                    key.elem_size as c_int,
                    ffi::RSMPI_UINT8_T,
                    element.as_mut_ptr(),
                ),
                "MPI_Type_contiguous",
            )?;
            let mut element = element.assume_init();
            check(
                ffi::MPI_Type_create_subarray(
                    3,
                    key.sizes.as_ptr(),
                    key.subsizes.as_ptr(),
                    key.starts.as_ptr(),
                    ffi::MPI_ORDER_C as c_int,
                    element,
                    subarray.as_mut_ptr(),
                ),
                "MPI_Type_create_subarray",
            )?;
            let mut subarray = subarray.assume_init();
            check(ffi::MPI_Type_commit(&mut subarray), "MPI_Type_commit")?;
            check(ffi::MPI_Type_free(&mut element), "MPI_Type_free")?;
            self.datatypes.insert(key, subarray);
            Ok(subarray)
        }
    }

    fn free_datatypes(&mut self) {
        for (_, mut datatype) in self.datatypes.drain() {
            // SAFETY: each cached type was committed by us; pending requests keep their own
            // reference, so freeing is allowed.
            unsafe { ffi::MPI_Type_free(&mut datatype) };
        }
    }

    fn peer_rank(&self, peer: NodeId, what: &str) -> Result<c_int> {
        if peer.0 as usize >= self.size || peer.0 as usize == self.rank {
            return Err(comm_error(format!(
                "{what}: {peer} is not another node of this {}-node run (this is N{})",
                self.size, self.rank
            )));
        }
        Ok(peer.0 as c_int)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PayloadDirection {
    Send,
    Receive,
}

impl MpiCommunicator {
    /// Starts a payload send or receive of the box `stride` at `base` with peer `peer`.
    ///
    /// # Safety
    /// The allocation at `base` must cover `stride` and stay valid (for reads when sending, for
    /// writes when receiving) until the returned event completes.
    unsafe fn start_payload(
        &mut self,
        direction: PayloadDirection,
        peer: NodeId,
        id: MessageId,
        base: *mut u8,
        stride: Stride,
    ) -> Result<AsyncEvent> {
        let what = match direction {
            PayloadDirection::Send => "send_payload",
            PayloadDirection::Receive => "receive_payload",
        };
        let peer = self.peer_rank(peer, what)?;
        let (base_offset, key) = normalise_stride(&stride)?;
        let datatype = self.datatype(key)?;
        // SAFETY: reading an extern constant of the MPI library.
        let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: the caller guarantees the allocation covers `stride` and outlives the request;
        // `base_offset` (the folded dimension-0 offset) stays inside it.
        let code = unsafe {
            let buffer = base.add(base_offset).cast();
            match direction {
                PayloadDirection::Send => ffi::MPI_Isend(
                    buffer,
                    1,
                    datatype,
                    peer,
                    payload_tag(id),
                    self.comm,
                    &mut request,
                ),
                PayloadDirection::Receive => ffi::MPI_Irecv(
                    buffer,
                    1,
                    datatype,
                    peer,
                    payload_tag(id),
                    self.comm,
                    &mut request,
                ),
            }
        };
        check(code, what)?;
        let (event, completer) = AsyncEvent::pending();
        self.payloads.push((request, direction, completer));
        Ok(event)
    }
}

impl MpiCommunicator {
    /// Sends one pilot-sized message to rank `to` on the pilot tag.
    fn send_pilot_words(&mut self, to: c_int, words: [u64; PILOT_WORDS]) -> Result<()> {
        let buffer = Box::new(words);
        // SAFETY: reading an extern constant of the MPI library.
        let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
        check(
            // SAFETY: the buffer is boxed and kept in `pilot_sends` until the send tests complete.
            unsafe {
                ffi::MPI_Isend(
                    buffer.as_ptr().cast(),
                    PILOT_BYTES as c_int,
                    ffi::RSMPI_UINT8_T,
                    to,
                    PILOT_TAG,
                    self.comm,
                    &mut request,
                )
            },
            "MPI_Isend (pilot)",
        )?;
        self.pilot_sends.push((request, buffer));
        Ok(())
    }

    /// Files one pilot-sized message from rank `from`: a pilot, a control message's header, or a
    /// chunk of the control message.
    fn receive_pilot_words(&mut self, from: usize, words: [u64; PILOT_WORDS]) {
        if let Some(incoming) = self.incoming_control.get_mut(&from) {
            let chunk: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
            let wanted = (incoming.len - incoming.bytes.len()).min(PILOT_BYTES);
            incoming.bytes.extend_from_slice(&chunk[..wanted]);
        } else if words[0] == CONTROL_HEADER {
            let len = (words[1] as usize).min(CONTROL_MESSAGE_LIMIT);
            self.incoming_control.insert(
                from,
                IncomingControl {
                    len,
                    bytes: Vec::with_capacity(len),
                },
            );
        } else {
            self.received_pilots.push(InboundPilot {
                from: NodeId(from as u64),
                message: decode_pilot(&words),
            });
            return;
        }
        if self.incoming_control[&from].bytes.len() == self.incoming_control[&from].len
            && let Some(done) = self.incoming_control.remove(&from)
        {
            self.control_messages
                .push((NodeId(from as u64), done.bytes));
        }
    }
}

impl Communicator for MpiCommunicator {
    fn num_nodes(&self) -> usize {
        self.size
    }

    fn host_placement(&self, cpus: &CpuMask) -> Result<HostPlacement> {
        let mut local = self.host_local_comm()?;
        let gathered = rank_and_size(local).and_then(|(rank, size)| {
            let mut masks: Vec<CpuMask> =
                vec![[0; CPU_MASK_WORDS]; usize::try_from(size).unwrap_or(0).max(1)];
            check(
                // SAFETY: the send buffer is one mask of `CPU_MASK_WORDS` u64; the receive
                // buffer holds one mask per process of `local` (its size); `local` is valid.
                unsafe {
                    ffi::MPI_Allgather(
                        cpus.as_ptr().cast(),
                        CPU_MASK_WORDS as c_int,
                        ffi::RSMPI_UINT64_T,
                        masks.as_mut_ptr().cast(),
                        CPU_MASK_WORDS as c_int,
                        ffi::RSMPI_UINT64_T,
                        local,
                    )
                },
                "MPI_Allgather",
            )?;
            Ok((rank, size, masks))
        });
        // SAFETY: `local` is valid and freed once, whatever the gather's outcome.
        let freed = check(unsafe { ffi::MPI_Comm_free(&mut local) }, "MPI_Comm_free");
        let (rank, size, masks) = gathered.and_then(|placed| freed.map(|()| placed))?;
        let overlaps = |mask: &CpuMask| mask.iter().zip(cpus).any(|(a, b)| a & b != 0);
        Ok(HostPlacement {
            local_rank: rank as usize,
            local_processes: size as usize,
            core_sharers: masks.iter().filter(|mask| overlaps(mask)).count().max(1),
        })
    }

    fn describe(&self) -> String {
        let library = library_version().unwrap_or_else(|_| "unknown MPI library".to_owned());
        // The identification string goes on with package, repository revision and date; its
        // first part names the implementation and version.
        let first = library.split([',', '\n']).next().unwrap_or_default().trim();
        format!("MPI ({first})")
    }

    fn local_node(&self) -> NodeId {
        NodeId(self.rank as u64)
    }

    fn send_outbound_pilot(&mut self, pilot: &OutboundPilot) -> Result<()> {
        let to = self.peer_rank(pilot.to, "send_outbound_pilot")?;
        self.send_pilot_words(to, encode_pilot(&pilot.message))
    }

    fn broadcast_control(&mut self, message: &[u8]) -> Result<()> {
        if message.len() > CONTROL_MESSAGE_LIMIT {
            return Err(Error::internal(format!(
                "control message of {} bytes exceeds the limit of {CONTROL_MESSAGE_LIMIT}",
                message.len()
            )));
        }
        let mut header = [0u64; PILOT_WORDS];
        header[0] = CONTROL_HEADER;
        header[1] = message.len() as u64;
        let rank = self.rank;
        for peer in (0..self.size).filter(|&p| p != rank) {
            self.send_pilot_words(peer as c_int, header)?;
            for chunk in message.chunks(PILOT_BYTES) {
                let mut words = [0u64; PILOT_WORDS];
                for (word, bytes) in words.iter_mut().zip(chunk.chunks(8)) {
                    let mut eight = [0u8; 8];
                    eight[..bytes.len()].copy_from_slice(bytes);
                    *word = u64::from_ne_bytes(eight);
                }
                self.send_pilot_words(peer as c_int, words)?;
            }
        }
        Ok(())
    }

    fn take_control_messages(&mut self) -> Vec<(NodeId, Vec<u8>)> {
        std::mem::take(&mut self.control_messages)
    }

    fn poll_inbound_pilots(&mut self) -> Result<Vec<InboundPilot>> {
        let mut status = MaybeUninit::<ffi::MPI_Status>::uninit();
        loop {
            if !Self::test(&mut self.pilot_receive, &mut status)? {
                break;
            }
            // SAFETY: MPI_Test reported completion and filled `status`.
            let from = unsafe { status.assume_init_ref() }.MPI_SOURCE as usize;
            let words = *self.pilot_buffer;
            self.post_pilot_receive()?;
            self.receive_pilot_words(from, words);
        }
        Ok(std::mem::take(&mut self.received_pilots))
    }

    unsafe fn send_payload(
        &mut self,
        to: NodeId,
        id: MessageId,
        base: *const u8,
        stride: Stride,
    ) -> Result<AsyncEvent> {
        // SAFETY: forwarded contract of send_payload.
        unsafe { self.start_payload(PayloadDirection::Send, to, id, base.cast_mut(), stride) }
    }

    unsafe fn receive_payload(
        &mut self,
        from: NodeId,
        id: MessageId,
        base: *mut u8,
        stride: Stride,
    ) -> Result<AsyncEvent> {
        // SAFETY: forwarded contract of receive_payload.
        unsafe { self.start_payload(PayloadDirection::Receive, from, id, base, stride) }
    }

    fn poll(&mut self) -> Result<()> {
        let mut status = MaybeUninit::<ffi::MPI_Status>::uninit();
        let mut index = 0;
        while index < self.payloads.len() {
            if Self::test(&mut self.payloads[index].0, &mut status)? {
                let (_, _, completer) = self.payloads.swap_remove(index);
                completer.complete(Ok(Completion::Done));
            } else {
                index += 1;
            }
        }
        let mut index = 0;
        while index < self.pilot_sends.len() {
            if Self::test(&mut self.pilot_sends[index].0, &mut status)? {
                self.pilot_sends.swap_remove(index);
            } else {
                index += 1;
            }
        }
        Ok(())
    }

    fn abandon_transfers(&mut self) -> bool {
        for (request, direction, _) in &mut self.payloads {
            if *direction == PayloadDirection::Receive {
                // SAFETY: an active receive of this communicator. Cancelling one that has not
                // matched ends it; one that has matched completes as usual.
                unsafe { ffi::MPI_Cancel(request) };
            }
        }
        // Cancelled receives end at once and sends to a live peer complete soon; a send whose
        // receiver failed, or a receive already streaming from a failed sender, may never end.
        let deadline = std::time::Instant::now() + ABANDON_GRACE;
        let mut status = MaybeUninit::<ffi::MPI_Status>::uninit();
        loop {
            let mut index = 0;
            while index < self.payloads.len() {
                if Self::test(&mut self.payloads[index].0, &mut status).unwrap_or(false) {
                    let (_, _, completer) = self.payloads.swap_remove(index);
                    completer.complete(Err(super::abandoned_transfer()));
                } else {
                    index += 1;
                }
            }
            self.pilot_sends
                .retain_mut(|(request, _)| !Self::test(request, &mut status).unwrap_or(false));
            let clean = self.payloads.is_empty() && self.pilot_sends.is_empty();
            if clean || std::time::Instant::now() >= deadline {
                return clean;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    fn collective_clone(&mut self) -> Result<Box<dyn Communicator>> {
        Ok(Box::new(Self::duplicate(self.comm)?))
    }

    fn collective_barrier(&mut self) -> Result<()> {
        // SAFETY: `comm` is a valid communicator owned by this object.
        check(unsafe { ffi::MPI_Barrier(self.comm) }, "MPI_Barrier")
    }

    fn native_handle(&self) -> usize {
        &self.comm as *const ffi::MPI_Comm as usize
    }

    fn collective_gather_bytes(
        &mut self,
        root: NodeId,
        bytes: &[u8],
    ) -> Result<Option<Vec<Vec<u8>>>> {
        let root_rank = usize::try_from(root.0)
            .ok()
            .filter(|&r| r < self.size)
            .ok_or_else(|| comm_error(format!("gather: root {root} is not a rank of this run")))?
            as c_int;
        let length = c_int::try_from(bytes.len())
            .map_err(|_| comm_error(format!("gather: {} bytes exceed INT_MAX", bytes.len())))?;
        let is_root = self.rank == root_rank as usize;
        let mut lengths: Vec<c_int> = vec![0; if is_root { self.size } else { 0 }];
        check(
            // SAFETY: the send buffer is one int; on the root the receive buffer holds one int per
            // rank (on other ranks MPI ignores it); `comm` is valid while `self` lives.
            unsafe {
                ffi::MPI_Gather(
                    (&length as *const c_int).cast(),
                    1,
                    ffi::RSMPI_INT32_T,
                    lengths.as_mut_ptr().cast(),
                    1,
                    ffi::RSMPI_INT32_T,
                    root_rank,
                    self.comm,
                )
            },
            "MPI_Gather",
        )?;
        let mut displacements: Vec<c_int> = Vec::with_capacity(lengths.len());
        let mut total = 0usize;
        for &l in &lengths {
            displacements.push(
                c_int::try_from(total)
                    .map_err(|_| comm_error("gather: more than INT_MAX bytes in total".into()))?,
            );
            total += l as usize;
        }
        // An empty Vec's dangling pointer is 0x1, which Open MPI reads as MPI_IN_PLACE: point
        // empty buffers at a real byte instead.
        let dummy = [0u8; 1];
        let send_ptr = if bytes.is_empty() {
            dummy.as_ptr()
        } else {
            bytes.as_ptr()
        };
        let mut gathered = vec![0u8; total.max(1)];
        check(
            // SAFETY: `bytes` holds `length` bytes; on the root `gathered` holds the sum of all
            // lengths, and `lengths`/`displacements` have one entry per rank describing disjoint
            // parts of it (other ranks pass empty arrays, which MPI ignores there).
            unsafe {
                ffi::MPI_Gatherv(
                    send_ptr.cast(),
                    length,
                    ffi::RSMPI_UINT8_T,
                    gathered.as_mut_ptr().cast(),
                    lengths.as_ptr(),
                    displacements.as_ptr(),
                    ffi::RSMPI_UINT8_T,
                    root_rank,
                    self.comm,
                )
            },
            "MPI_Gatherv",
        )?;
        if !is_root {
            return Ok(None);
        }
        Ok(Some(
            lengths
                .iter()
                .zip(&displacements)
                .map(|(&l, &d)| gathered[d as usize..d as usize + l as usize].to_vec())
                .collect(),
        ))
    }
}

impl Drop for MpiCommunicator {
    fn drop(&mut self) {
        // SAFETY: every request below belongs to this communicator; waiting on or cancelling
        // them before freeing the communicator is the required teardown order. Buffers stay
        // alive until after the waits.
        unsafe {
            for (request, _) in &mut self.pilot_sends {
                ffi::MPI_Wait(request, ffi::RSMPI_STATUS_IGNORE);
            }
            for (request, _, _) in &mut self.payloads {
                ffi::MPI_Wait(request, ffi::RSMPI_STATUS_IGNORE);
            }
            ffi::MPI_Cancel(&mut self.pilot_receive);
            ffi::MPI_Wait(&mut self.pilot_receive, ffi::RSMPI_STATUS_IGNORE);
            self.free_datatypes();
            ffi::MPI_Comm_free(&mut self.comm);
        }
    }
}

#[cfg(test)]
#[path = "tests/mpi.rs"]
mod tests;
