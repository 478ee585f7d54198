// SPDX-License-Identifier: GPL-2.0

//! Misc character devices (`/dev/<name>`, or a node path and mode of the
//! caller's, such as `/dev/infiniband/uverbs0`, 0666) and anonymous files
//! (descriptors with no node, the event files of uverbs): `open`, `read`,
//! `write`, `poll`, `ioctl`, `mmap` and `release` in safe Rust.
//!
//! C header: [`include/linux/miscdevice.h`](srctree/include/linux/miscdevice.h)
//!
//! A driver implements [`CharDevOps`] and registers it with
//! [`MiscDev::register`]. Every `open` makes a [`CharDevOps::File`], which
//! the open file owns, together with a reference to the operations, until
//! its `release`: a device may be dropped (and the node gone) while files
//! are still open, and those keep working. Every open file also pins the
//! module that registered the device, so the driver's code stays loaded
//! until the last file is closed.
//!
//! An [`AnonFile`] is a file served by the same operations with an object
//! the caller made, handed to the calling process as a new descriptor.
//!
//! `read` and `write` get the caller's buffer (a [`UserSliceWriter`] or
//! [`UserSliceReader`]) and
//! whether the file was opened non-blocking; the file position is not
//! used. `poll` gets a [`PollTable`] to register on the file's
//! [`PollQueue`](crate::kshim::poll::PollQueue)s (see `poll.rs` for why
//! those must be owned by the file or the device).
//!
//! An `mmap` handler gets a [`Vma`]: it may map pages ([`Vma::map_pages`],
//! a `VM_PFNMAP` mapping that `pin_user_pages` refuses) and ask to be told
//! when the mapping goes ([`Vma::on_close`]). The mapping keeps its own
//! reference on every page it maps until then, so no safe code can leave a
//! process with a mapping of a freed page.
//!
//! The 6.12 kernel crate has no `miscdevice` and no VMA abstraction; the
//! plumbing is C (`chardev_glue.c`, which says why every open file is moved
//! to file operations of its own).

use core::ffi::{c_int, c_void};
use core::mem::ManuallyDrop;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering};

use kernel::error::code::EBADF;
use kernel::error::{from_err_ptr, to_result};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::uaccess::{UserSlice, UserSliceReader, UserSliceWriter};
use kernel::ThisModule;

use crate::kshim::bindings;
use crate::kshim::pages::{page_size, SharedPage};
use crate::kshim::poll::PollTable;

/// An identity of the current process's address space (its `mm` address,
/// 0 for a kernel thread), to compare a mapping's process with the one
/// that registered something.
pub use crate::kshim::pages::current_mm_id;

/// What a misc device does.
///
/// Every method runs in process context and may sleep. `open` runs with
/// the misc core's lock held: it must not register or drop a [`MiscDev`],
/// nor take a lock under which anyone registers one. The core's device
/// registry is such a lock (`rdma_rs_uverbs` makes its `uverbsN` in its
/// client's `add`, which the registry calls with its lock held): an `open`
/// must not look devices up (`rdma::device::get_by_name`) or make verbs
/// objects; it defers that to the file's first command.
/// `ioctl` and `mmap` may run concurrently on one file.
pub trait CharDevOps: Send + Sync + 'static {
    /// What an open file holds.
    type File: Send + Sync + 'static;

    /// Opens a file; an error fails `open(2)`.
    fn open(&self) -> Result<Self::File>;

    /// An `ioctl(2)` on `file`. `arg` is the caller's raw argument: an
    /// [`IoctlArg`] (or a [`kernel::uaccess::UserSlice`]) reaches the
    /// user memory it points at. The
    /// value is what the system call returns (an error, `-errno`).
    fn ioctl(&self, file: &Self::File, cmd: u32, arg: usize) -> Result<isize>;

    /// A `read(2)` of up to `out.len()` bytes, written through `out`;
    /// `nonblock` if the file is `O_NONBLOCK`. The value is the number of
    /// bytes read (what the system call returns). The default refuses with
    /// `EINVAL`, as a file without a read operation does.
    fn read(&self, _file: &Self::File, _out: UserSliceWriter, _nonblock: bool) -> Result<usize> {
        Err(EINVAL)
    }

    /// A `write(2)` of `data.len()` bytes, read through `data`; `nonblock`
    /// if the file is `O_NONBLOCK`. The value is the number of bytes taken.
    /// The default refuses with `EINVAL`.
    fn write(&self, _file: &Self::File, _data: UserSliceReader, _nonblock: bool) -> Result<usize> {
        Err(EINVAL)
    }

    /// A `poll(2)`, `select(2)` or `epoll` of `file`: register on the
    /// queues whose wake-ups matter through `table`, then return the
    /// events ready now (`kshim::poll::POLLIN` and the rest). The default
    /// waits on nothing and says the file is readable and writable, as a
    /// file without a poll operation is.
    fn poll<'a>(&'a self, _file: &'a Self::File, _table: &PollTable<'a>) -> u32 {
        crate::kshim::poll::POLLIN
            | crate::kshim::poll::POLLOUT
            | crate::kshim::poll::POLLRDNORM
            | crate::kshim::poll::POLLWRNORM
    }

    /// An `mmap(2)` of `file`: set the mapping up through `vma`. On error
    /// nothing of what was done through `vma` stays (no pages, no
    /// `on_close`).
    fn mmap(&self, _file: &Self::File, _vma: &mut Vma) -> Result {
        Err(ENODEV)
    }

    /// The last reference to `file` is gone (every descriptor closed and
    /// every mapping of it unmapped, so every `on_close` has run).
    fn release(&self, _file: Self::File) {}
}

/// The `N`-byte structure an `ioctl` argument points at: copied in from
/// the caller, its fields read and written in native byte order at their
/// offsets (the C structure's layout), and copied back out for the
/// outputs. An offset past the structure reads as 0 and is not written
/// (offsets are the handler's constants).
pub struct IoctlArg<const N: usize> {
    arg: usize,
    bytes: [u8; N],
}

impl<const N: usize> IoctlArg<N> {
    /// Copies the structure in (`EFAULT` for a bad pointer).
    pub fn read(arg: usize) -> Result<Self> {
        let mut bytes = [0u8; N];
        kernel::uaccess::UserSlice::new(arg, N)
            .reader()
            .read_slice(&mut bytes)?;
        Ok(IoctlArg { arg, bytes })
    }

    /// An all-zero structure, for an argument that is only written.
    pub fn zeroed(arg: usize) -> Self {
        IoctlArg {
            arg,
            bytes: [0u8; N],
        }
    }

    /// Its bytes.
    pub fn bytes(&self) -> &[u8; N] {
        &self.bytes
    }

    /// Its bytes, to fill.
    pub fn bytes_mut(&mut self) -> &mut [u8; N] {
        &mut self.bytes
    }

    fn field<const W: usize>(&self, off: usize) -> [u8; W] {
        let mut w = [0u8; W];
        if let Some(b) = self.bytes.get(off..off.saturating_add(W)) {
            w.copy_from_slice(b);
        }
        w
    }

    fn set<const W: usize>(&mut self, off: usize, v: [u8; W]) {
        if let Some(b) = self.bytes.get_mut(off..off.saturating_add(W)) {
            b.copy_from_slice(&v);
        }
    }

    /// The `u32` at `off`.
    pub fn u32(&self, off: usize) -> u32 {
        u32::from_ne_bytes(self.field(off))
    }

    /// The `u64` at `off`.
    pub fn u64(&self, off: usize) -> u64 {
        u64::from_ne_bytes(self.field(off))
    }

    /// Sets the `u32` at `off`.
    pub fn set_u32(&mut self, off: usize, v: u32) {
        self.set(off, v.to_ne_bytes());
    }

    /// Sets the `u64` at `off`.
    pub fn set_u64(&mut self, off: usize, v: u64) {
        self.set(off, v.to_ne_bytes());
    }

    /// Copies the structure back out to the caller.
    pub fn write_back(&self) -> Result {
        kernel::uaccess::UserSlice::new(self.arg, N)
            .writer()
            .write_slice(&self.bytes)
    }
}

/// A registered misc device; deregistered when dropped.
///
/// Dropping it removes `/dev/<name>` and waits for any `open` in progress;
/// files already open stay open, each with its own reference to the
/// operations.
///
/// # Invariants
///
/// - `raw` came from a successful `rdma_rs_chardev_register` and is
///   unregistered (and freed) only in `drop`.
/// - The context pointer the glue holds is the address of `ctx`'s content,
///   which is freed after that unregistration (field drop order).
pub struct MiscDev<T: CharDevOps> {
    raw: NonNull<bindings::rdma_rs_chardev>,
    /// Handed to C for `open`; freed after `raw` is unregistered.
    _ctx: KBox<DevCtx<T>>,
}

// SAFETY: the handle only unregisters the device, which may be done from
// any thread in process context; the context it owns holds an `Arc<T>` with
// `T: Send + Sync`.
unsafe impl<T: CharDevOps> Send for MiscDev<T> {}
// SAFETY: `&MiscDev` gives access to nothing.
unsafe impl<T: CharDevOps> Sync for MiscDev<T> {}

impl<T: CharDevOps> MiscDev<T> {
    /// Registers `/dev/<name>` (a dynamic minor, mode 0600) whose files
    /// `ops` serves, for `module`, the caller's `THIS_MODULE`: each open
    /// file pins it until released. Process context.
    pub fn register(
        name: &'static CStr,
        ops: Arc<T>,
        module: &'static ThisModule,
    ) -> Result<Pin<KBox<Self>>> {
        Self::register_node(name, None, 0o600, ops, module)
    }

    /// As [`MiscDev::register`], with the device's name copied, its node
    /// at `/dev/<node>` if `node` is given (a relative path such as
    /// `infiniband/uverbs0`; the directory is made as needed) and the
    /// node's permission bits `mode`. `EINVAL` for an empty name, a name
    /// with a `/`, or a node path that is absolute or has an empty, `.` or
    /// `..` component.
    pub fn register_node(
        name: &CStr,
        node: Option<&CStr>,
        mode: u16,
        ops: Arc<T>,
        module: &'static ThisModule,
    ) -> Result<Pin<KBox<Self>>> {
        Self::register_inner(name, node, mode, None, ops, module)
    }

    /// As [`MiscDev::register_node`], with `/sys/class/misc/<name>/abi_version`
    /// showing `abi` (what user space checks before it uses the device,
    /// as librdmacm does for `rdma_cm`).
    pub fn register_node_abi(
        name: &CStr,
        node: Option<&CStr>,
        mode: u16,
        abi: u16,
        ops: Arc<T>,
        module: &'static ThisModule,
    ) -> Result<Pin<KBox<Self>>> {
        Self::register_inner(name, node, mode, Some(abi), ops, module)
    }

    fn register_inner(
        name: &CStr,
        node: Option<&CStr>,
        mode: u16,
        abi: Option<u16>,
        ops: Arc<T>,
        module: &'static ThisModule,
    ) -> Result<Pin<KBox<Self>>> {
        if name.is_empty() || name.as_bytes().contains(&b'/') {
            return Err(EINVAL);
        }
        if let Some(node) = node {
            check_node(node)?;
        }
        let ctx = KBox::new(
            DevCtx {
                open: DevCtx::<T>::open_file,
                ops,
            },
            GFP_KERNEL,
        )?;
        let ctx_ptr = core::ptr::from_ref::<DevCtx<T>>(&ctx).cast::<c_void>();
        // Why the call is sound:
        // - `name` and `node` are NUL-terminated and copied by the glue.
        // - `ctx_ptr` is only used by the glue's open, which cannot run once
        //   the device is unregistered; `drop` does that before it frees
        //   `ctx` (field order), and moving the box does not move its
        //   content.
        // - `module` is the caller's module (documented), alive while it
        //   runs; the glue only takes references on it.
        // SAFETY: as listed above: copied names, a context that outlives
        // every open, the caller's own module.
        let raw = unsafe { register_raw(module, name, node, mode, abi, ctx_ptr)? };
        // INVARIANT: registered above, with `ctx`'s content as context.
        Ok(KBox::pin(MiscDev { raw, _ctx: ctx }, GFP_KERNEL)?)
    }

    /// The device number of the node, `(major, minor)`.
    pub fn devt(&self) -> (u32, u32) {
        devt_raw(self.raw)
    }
}

/// `EINVAL` unless `node` is a relative path of non-empty components
/// other than `.` and `..`.
fn check_node(node: &CStr) -> Result {
    let b = node.as_bytes();
    if b.is_empty() || b[0] == b'/' {
        return Err(EINVAL);
    }
    for part in b.split(|&c| c == b'/') {
        if part.is_empty() || part == b"." || part == b".." {
            return Err(EINVAL);
        }
    }
    Ok(())
}

/// The device number of a registered device, non-generic (see
/// [`register_raw`]).
#[inline(never)]
fn devt_raw(raw: NonNull<bindings::rdma_rs_chardev>) -> (u32, u32) {
    // SAFETY: `raw` is registered (the `MiscDev` invariant of the caller,
    // which borrows the device for this call).
    unsafe {
        (
            bindings::rdma_rs_chardev_major(raw.as_ptr()),
            bindings::rdma_rs_chardev_minor(raw.as_ptr()),
        )
    }
}

impl<T: CharDevOps> Drop for MiscDev<T> {
    fn drop(&mut self) {
        // SAFETY: `raw` is registered (type invariant) and this is its only
        // unregistration; it returns once no open is in progress, and no
        // open can start after it, so `_ctx` is unused when freed next.
        unsafe { unregister_raw(self.raw) }
    }
}

/// An anonymous file (a descriptor with no node, as an `eventfd` is)
/// served by a [`CharDevOps`] with a file object of its own, and the
/// descriptor reserved for it in the calling process, not yet visible to
/// it.
///
/// [`AnonFile::install`] makes the descriptor live and gives its number;
/// dropping the value instead gives the descriptor back and releases the
/// file (the `release` of its operations runs). That is the order a call
/// that returns a new descriptor in a reply wants: reserve, write the
/// reply, install only once that worked, so that a failed reply leaves
/// no descriptor behind.
///
/// The value belongs to the calling task's descriptor table, so it is not
/// `Send`: the task that made it installs it or drops it.
///
/// # Invariants
///
/// `fd` is a descriptor reserved (not installed) in the table of the task
/// that made the value, and `file` an anonymous file of `chardev_glue.c`
/// whose only reference is ours; both are consumed once, by `install` or
/// by `drop`.
pub struct AnonFile {
    fd: i32,
    file: NonNull<bindings::file>,
}

impl AnonFile {
    /// Makes a file named `name` (as `/proc/<pid>/fdinfo` shows it,
    /// `anon_inode:<name>`) whose calls `ops` serves with `file` as the
    /// open file's object, readable, and writable if `writable`; it pins
    /// `module`, the caller's `THIS_MODULE`, until released. The
    /// descriptor is close-on-exec. Process context.
    pub fn new<T: CharDevOps>(
        name: &'static CStr,
        ops: Arc<T>,
        file: T::File,
        writable: bool,
        module: &'static ThisModule,
    ) -> Result<AnonFile> {
        let obj = KBox::new(
            OpenFile {
                vtable: &OpenFile::<T>::VTABLE,
                ops_id: ops_id(&ops),
                ops,
                file,
            },
            GFP_KERNEL,
        )?;
        let ctx = KBox::into_raw(obj).cast::<c_void>();
        // SAFETY: `ctx` is a live `OpenFile<T>`, handed over to the file on
        // success (its release frees it); `module` is the caller's.
        match unsafe { anon_raw(module, name, ctx, writable) } {
            // INVARIANT: reserved and made just now, by this task.
            Ok((fd, file)) => Ok(AnonFile { fd, file }),
            Err(e) => {
                // SAFETY: on failure the glue kept nothing of `ctx`, which
                // came from `KBox::into_raw` above and is not used again.
                unsafe { OpenFile::<T>::release(ctx) };
                Err(e)
            }
        }
    }

    /// The reserved descriptor's number.
    pub fn fd(&self) -> i32 {
        self.fd
    }

    /// Installs the descriptor in the calling task's table and returns its
    /// number; from then on the file is the process's.
    pub fn install(self) -> i32 {
        let this = ManuallyDrop::new(self);
        // SAFETY: reserved by this task and not yet consumed (type
        // invariant); `this` is not dropped, so this is its only use.
        unsafe { anon_install_raw(this.fd, this.file) };
        this.fd
    }
}

impl Drop for AnonFile {
    fn drop(&mut self) {
        // SAFETY: not consumed by `install` (which does not drop), so the
        // descriptor is still reserved and the reference ours (type
        // invariant).
        unsafe { anon_abort_raw(self.fd, self.file) }
    }
}

/// `rdma_rs_anon_file`, non-generic (see [`register_raw`]): the
/// descriptor and the file.
///
/// # Safety
///
/// `ctx` must be a live open-file object (`OpenFile`), owned by the file
/// from success on; `module` the caller's own module.
#[inline(never)]
unsafe fn anon_raw(
    module: &'static ThisModule,
    name: &CStr,
    ctx: *mut c_void,
    writable: bool,
) -> Result<(i32, NonNull<bindings::file>)> {
    let mut file: *mut bindings::file = core::ptr::null_mut();
    // SAFETY: the caller's guarantees; `name` is NUL-terminated and
    // static (the anonymous inode keeps the pointer); `file` is writable.
    let fd = unsafe {
        bindings::rdma_rs_anon_file(
            module.as_ptr().cast(),
            name.as_char_ptr(),
            ctx,
            writable,
            &mut file,
        )
    };
    if fd < 0 {
        return Err(Error::from_errno(fd));
    }
    let Some(file) = NonNull::new(file) else {
        // Not reached: the glue sets the file whenever it succeeds.
        return Err(EINVAL);
    };
    Ok((fd, file))
}

/// `rdma_rs_anon_file_install`, non-generic.
///
/// # Safety
///
/// `fd` and `file` from [`anon_raw`] in this task, not consumed.
#[inline(never)]
unsafe fn anon_install_raw(fd: i32, file: NonNull<bindings::file>) {
    // SAFETY: the caller's guarantee.
    unsafe { bindings::rdma_rs_anon_file_install(fd, file.as_ptr()) }
}

/// `rdma_rs_anon_file_abort`, non-generic.
///
/// # Safety
///
/// As for [`anon_install_raw`].
#[inline(never)]
unsafe fn anon_abort_raw(fd: i32, file: NonNull<bindings::file>) {
    // SAFETY: the caller's guarantee.
    unsafe { bindings::rdma_rs_anon_file_abort(fd, file.as_ptr()) }
}

/// `rdma_rs_chardev_register`, from this crate's object whatever the `T`
/// of the [`MiscDev`] (a consumer's instance of the generic code cannot
/// reach the C glue, which is not exported).
///
/// # Safety
///
/// As the glue requires: `ctx` valid for the device's life, `module` the
/// caller's own module.
#[inline(never)]
unsafe fn register_raw(
    module: &'static ThisModule,
    name: &CStr,
    node: Option<&CStr>,
    mode: u16,
    abi: Option<u16>,
    ctx: *const c_void,
) -> Result<NonNull<bindings::rdma_rs_chardev>> {
    let node = node.map_or(core::ptr::null(), |n| n.as_char_ptr());
    let abi = abi.map_or(-1, i32::from);
    // SAFETY: the caller's guarantees; `name` and `node` (or null) are
    // NUL-terminated and copied.
    let raw = unsafe {
        bindings::rdma_rs_chardev_register(
            module.as_ptr().cast(),
            name.as_char_ptr(),
            node,
            mode,
            abi,
            ctx,
        )
    };
    let raw = from_err_ptr(raw)?;
    NonNull::new(raw).ok_or(EINVAL)
}

/// `rdma_rs_chardev_unregister`, non-generic (see [`register_raw`]).
///
/// # Safety
///
/// `raw` came from [`register_raw`] and is unregistered once.
#[inline(never)]
unsafe fn unregister_raw(raw: NonNull<bindings::rdma_rs_chardev>) {
    // SAFETY: the caller's guarantee.
    unsafe { bindings::rdma_rs_chardev_unregister(raw.as_ptr()) }
}

/// How the glue's open reaches a device's `T`.
type OpenFn = unsafe fn(*const c_void, *mut *mut c_void) -> Result;

/// A device's context, as the glue holds it (a thin pointer).
///
/// `#[repr(C)]` with `open` first: the non-generic [`rdma_rs_chardev_open`]
/// reads it through a pointer to any `DevCtx<T>`.
#[repr(C)]
struct DevCtx<T: CharDevOps> {
    open: OpenFn,
    ops: Arc<T>,
}

impl<T: CharDevOps> DevCtx<T> {
    /// Opens a file of the device at `this` and stores its object in
    /// `*out`.
    ///
    /// # Safety
    ///
    /// `this` must point at a live `DevCtx<T>` and `out` be writable.
    unsafe fn open_file(this: *const c_void, out: *mut *mut c_void) -> Result {
        // SAFETY: per the function's contract.
        let this = unsafe { &*this.cast::<Self>() };
        // Allocated before `open`, so that every file `open` makes reaches
        // `release`.
        let slot = KBox::<OpenFile<T>>::new_uninit(GFP_KERNEL)?;
        let file = this.ops.open()?;
        let file = KBox::write(
            slot,
            OpenFile {
                vtable: &OpenFile::<T>::VTABLE,
                ops_id: ops_id(&this.ops),
                ops: this.ops.clone(),
                file,
            },
        );
        // SAFETY: `out` is writable (the function's contract).
        unsafe { *out = KBox::into_raw(file).cast() };
        Ok(())
    }
}

/// The operations of an open file with its type erased, for the
/// non-generic entry points.
struct FileVTable {
    /// # Safety: the pointer is a live `OpenFile<T>` of this vtable's `T`.
    ioctl: unsafe fn(*const c_void, u32, usize) -> Result<isize>,
    /// # Safety: as for `ioctl`, in an mmap call.
    mmap: unsafe fn(*const c_void, &mut Vma) -> Result,
    /// # Safety: as for `ioctl`; the slice is the caller's buffer.
    read: unsafe fn(*const c_void, UserSlice, bool) -> Result<usize>,
    /// # Safety: as for `ioctl`; the slice is the caller's buffer.
    write: unsafe fn(*const c_void, UserSlice, bool) -> Result<usize>,
    /// # Safety: as for `ioctl`, in a poll call whose file and table are
    /// the last two arguments.
    poll: unsafe fn(*const c_void, *mut bindings::file, *mut bindings::poll_table_struct) -> u32,
    /// # Safety: the pointer came from `KBox::into_raw` of an
    /// `OpenFile<T>` of this vtable's `T`, and is not used again.
    release: unsafe fn(*mut c_void),
}

/// The object `file->private_data` leads to: the file and the operations
/// it keeps alive.
///
/// `#[repr(C)]` with `vtable` first: a pointer to any `OpenFile<T>` is one
/// to its vtable.
#[repr(C)]
struct OpenFile<T: CharDevOps> {
    vtable: &'static FileVTable,
    /// The address of the operations' `T` ([`ops_id`]): with `vtable`,
    /// the [`FileHead`] every `OpenFile` starts with.
    ops_id: usize,
    ops: Arc<T>,
    file: T::File,
}

/// The start of every [`OpenFile`], whatever its `T` (both are
/// `#[repr(C)]` and begin with the same two fields).
#[repr(C)]
struct FileHead {
    vtable: &'static FileVTable,
    ops_id: usize,
}

/// What tells the files of one set of operations from any other's: the
/// address of the operations object, which lives as long as any file
/// (each holds an `Arc` of it).
fn ops_id<T>(ops: &Arc<T>) -> usize {
    core::ptr::from_ref::<T>(ops).cast::<u8>() as usize
}

/// The object of the open file behind descriptor `fd` of the calling
/// process, if it is a file served by `ops` (a misc device's or an
/// [`AnonFile`] of those operations): a clone of it, valid after the
/// descriptor is closed. `EBADF` for a descriptor that is not open,
/// `EINVAL` for a file of anything else (another device, a pipe).
/// Process context.
pub fn file_of_fd<T: CharDevOps>(fd: i32, ops: &Arc<T>) -> Result<T::File>
where
    T::File: Clone,
{
    let (file, ctx) = fget_raw(fd)?;
    // Why the reads are sound:
    // - the reference `fget_raw` took keeps the file open until the
    //   `fput_raw` below, and with it its `OpenFile` (freed only by
    //   release);
    // - every file the glue's operations serve has an `OpenFile<U>` for
    //   some `U` as its object, and every `OpenFile` starts with a
    //   `FileHead` (both `#[repr(C)]`, same leading fields);
    // - a head whose `ops_id` is that of `ops` belongs to an
    //   `OpenFile<T>`: two live operations objects have distinct
    //   addresses, and a `U` other than `T` would have a different one.
    let out = {
        // SAFETY: as argued above, `ctx` is a live `FileHead`.
        let head = unsafe { &*ctx.cast::<FileHead>() };
        if head.ops_id == ops_id(ops) {
            // SAFETY: as argued above, a live `OpenFile<T>`.
            let open = unsafe { &*ctx.cast::<OpenFile<T>>() };
            Ok(open.file.clone())
        } else {
            Err(EINVAL)
        }
    };
    // SAFETY: the reference `fget_raw` took, dropped once.
    unsafe { fput_raw(file) };
    out
}

/// `rdma_rs_chardev_fget`, non-generic (see [`register_raw`]): the file
/// of descriptor `fd`, with a reference the caller drops with
/// [`fput_raw`], and its object, if it is a file of the glue's (`EBADF`
/// for a descriptor not open, `EINVAL` for a file of anything else).
#[inline(never)]
fn fget_raw(fd: i32) -> Result<(NonNull<bindings::file>, *const c_void)> {
    let mut ctx: *mut c_void = core::ptr::null_mut();
    // SAFETY: `ctx` is writable; the glue writes it only when it returns a
    // file.
    let file = unsafe { bindings::rdma_rs_chardev_fget(fd, &mut ctx) };
    let file = NonNull::new(from_err_ptr(file)?).ok_or(EBADF)?;
    Ok((file, ctx.cast_const()))
}

/// `rdma_rs_chardev_fput`, non-generic.
///
/// # Safety
///
/// `file` came from [`fget_raw`], and its reference is dropped once.
#[inline(never)]
unsafe fn fput_raw(file: NonNull<bindings::file>) {
    // SAFETY: the caller's guarantee.
    unsafe { bindings::rdma_rs_chardev_fput(file.as_ptr()) }
}

impl<T: CharDevOps> OpenFile<T> {
    const VTABLE: FileVTable = FileVTable {
        ioctl: Self::ioctl,
        mmap: Self::mmap,
        read: Self::read,
        write: Self::write,
        poll: Self::poll,
        release: Self::release,
    };

    /// # Safety
    ///
    /// `this` must point at a live `OpenFile<T>`.
    unsafe fn read(this: *const c_void, buf: UserSlice, nonblock: bool) -> Result<usize> {
        // SAFETY: as in `ioctl`.
        let this = unsafe { &*this.cast::<Self>() };
        this.ops.read(&this.file, buf.writer(), nonblock)
    }

    /// # Safety
    ///
    /// `this` must point at a live `OpenFile<T>`.
    unsafe fn write(this: *const c_void, buf: UserSlice, nonblock: bool) -> Result<usize> {
        // SAFETY: as in `ioctl`.
        let this = unsafe { &*this.cast::<Self>() };
        this.ops.write(&this.file, buf.reader(), nonblock)
    }

    /// # Safety
    ///
    /// `this` must point at a live `OpenFile<T>`, and `file` and `table` be
    /// the arguments of the poll call in progress on it.
    unsafe fn poll(
        this: *const c_void,
        file: *mut bindings::file,
        table: *mut bindings::poll_table_struct,
    ) -> u32 {
        // SAFETY: as in `ioctl`.
        let this = unsafe { &*this.cast::<Self>() };
        // The table's `'a` is the borrow of `this` made here: `this` (the
        // open file, and the `Arc` of the operations it holds) lives until
        // the file's release, which comes after every poller has taken its
        // entries off the queues (`poll`/`select` before they return,
        // `epoll` when the file is released, before the release operation).
        // SAFETY: `file` and `table` are the poll call's (the function's
        // contract), and `'a` ends before the file's release (above).
        let table = unsafe { PollTable::new(file, table) };
        this.ops.poll(&this.file, &table)
    }

    /// # Safety
    ///
    /// `this` must point at a live `OpenFile<T>`.
    unsafe fn ioctl(this: *const c_void, cmd: u32, arg: usize) -> Result<isize> {
        // SAFETY: per the function's contract; only shared references to
        // an open file are made until its release.
        let this = unsafe { &*this.cast::<Self>() };
        this.ops.ioctl(&this.file, cmd, arg)
    }

    /// # Safety
    ///
    /// `this` must point at a live `OpenFile<T>`.
    unsafe fn mmap(this: *const c_void, vma: &mut Vma) -> Result {
        // SAFETY: as in `ioctl`.
        let this = unsafe { &*this.cast::<Self>() };
        this.ops.mmap(&this.file, vma)
    }

    /// # Safety
    ///
    /// `this` must come from `KBox::into_raw` of an `OpenFile<T>` (in
    /// `open_file`) and not be used by anything after this call.
    unsafe fn release(this: *mut c_void) {
        // SAFETY: per the function's contract, the box is ours again.
        let this = unsafe { KBox::from_raw(this.cast::<Self>()) };
        let OpenFile { ops, file, .. } = KBox::into_inner(this);
        ops.release(file);
    }
}

/// The vtable of the open file at `file`.
///
/// # Safety
///
/// `file` must point at a live `OpenFile<T>`, for any `T`.
unsafe fn vtable_of(file: *const c_void) -> &'static FileVTable {
    // SAFETY: an `OpenFile` is `#[repr(C)]` with its vtable reference first,
    // and `file` points at a live one (the function's contract).
    unsafe { *file.cast::<&'static FileVTable>() }
}

/// A mapping being set up by [`CharDevOps::mmap`]; valid during that call
/// only.
///
/// # Invariants
///
/// `raw` is the VMA of the `mmap` call in progress on this thread, with
/// the process's mmap lock held for writing, for as long as the `Vma`
/// lives (it lives in [`rdma_rs_chardev_mmap`]'s frame). `state` is not
/// shared with C yet.
pub struct Vma {
    raw: NonNull<bindings::vm_area_struct>,
    state: KBox<MapState>,
}

impl Vma {
    /// The first address of the mapping.
    pub fn start(&self) -> u64 {
        // SAFETY: the VMA is valid (type invariant).
        unsafe { bindings::rdma_rs_vma_start(self.raw.as_ptr()) as u64 }
    }

    /// The address after the mapping.
    pub fn end(&self) -> u64 {
        // SAFETY: the VMA is valid (type invariant).
        unsafe { bindings::rdma_rs_vma_end(self.raw.as_ptr()) as u64 }
    }

    /// The length of the mapping in bytes (a multiple of the page size).
    pub fn len(&self) -> u64 {
        self.end() - self.start()
    }

    /// Whether the mapping is empty (never, for a mapping being made).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The offset `mmap(2)` was given, in pages.
    pub fn pgoff(&self) -> u64 {
        // SAFETY: the VMA is valid (type invariant).
        unsafe { bindings::rdma_rs_vma_pgoff(self.raw.as_ptr()) as u64 }
    }

    /// Whether it is a shared mapping (`MAP_SHARED`, `VM_SHARED`).
    pub fn is_shared(&self) -> bool {
        // SAFETY: the VMA is valid (type invariant).
        unsafe { bindings::rdma_rs_vma_is_shared(self.raw.as_ptr()) }
    }

    /// Maps `pages`, in order, over the whole mapping, whose length must be
    /// `pages.len()` pages (else `EINVAL`).
    ///
    /// The mapping becomes `VM_IO | VM_PFNMAP` (`pin_user_pages` and
    /// `get_user_pages` refuse it), `VM_DONTEXPAND` and `VM_DONTCOPY` (not
    /// inherited by `fork`). It must be a shared one (`MAP_SHARED`): a
    /// private writable mapping is refused with `EINVAL`. Only one call per
    /// mapping (`EBUSY` after a successful one).
    ///
    /// The mapping holds a reference of its own on every page (a clone of
    /// each [`SharedPage`]) until it goes, after its [`Vma::on_close`]
    /// callback: the caller may drop its own pages at any time.
    pub fn map_pages(&mut self, pages: &[SharedPage]) -> Result {
        if !self.state.pages.is_empty() {
            return Err(EBUSY);
        }
        let bytes = (pages.len() as u64)
            .checked_mul(page_size() as u64)
            .ok_or(EINVAL)?;
        if pages.is_empty() || bytes != self.len() {
            return Err(EINVAL);
        }
        let mut held = KVec::with_capacity(pages.len(), GFP_KERNEL)?;
        let mut raw = KVec::with_capacity(pages.len(), GFP_KERNEL)?;
        for p in pages {
            held.push(p.clone(), GFP_KERNEL)?;
            raw.push(p.as_raw(), GFP_KERNEL)?;
        }
        // SAFETY:
        // - The VMA is in its mmap call with the mmap lock held for writing
        //   (type invariant), as the glue requires.
        // - `raw` holds `raw.len()` valid pages, each referenced by `held`,
        //   for the call.
        // - Once mapped, the pages stay referenced by `held`, kept in
        //   `state` until the mapping's close (or until the glue's zap if
        //   the mmap call fails: `rdma_rs_chardev_mmap`).
        to_result(unsafe {
            bindings::rdma_rs_vma_map_pages(self.raw.as_ptr(), raw.as_mut_ptr(), raw.len())
        })?;
        self.state.pages = held;
        Ok(())
    }

    /// Has `f` called once, when the mapping goes (unmapped, or the
    /// process exits). A later call replaces an earlier `f`, which is then
    /// dropped without being called; so is `f` if the mmap call fails.
    ///
    /// `f` runs in process context, possibly in another thread (or, after
    /// `mremap`, with the mapping moved), with that process's mmap lock
    /// held: it must not take the mmap lock (no `pin_user_pages`, no
    /// copies from user memory). The mapping cannot be split
    /// (`munmap`/`mprotect` of part of it fail with `EINVAL`) and is not
    /// inherited by `fork` (`VM_DONTCOPY`), so `f` runs once for all of it.
    /// (Should the process undo `VM_DONTCOPY` with `MADV_DOFORK`, possible
    /// when no pages are mapped, `f` runs when the last copy goes.)
    pub fn on_close<F: FnOnce() + Send + 'static>(&mut self, f: KBox<F>) {
        self.state.on_close = Some(CloseFn::new(f));
    }
}

/// What a mapping owns until it goes: the pages it maps and the callback
/// for its close. Allocated for every mmap call; handed to C only if used.
///
/// # Invariants
///
/// Once handed to C (`rdma_rs_vma_install`), `users` counts the VMAs whose
/// `vm_private_data` points at it; the last one to close frees it.
struct MapState {
    users: AtomicUsize,
    pages: KVec<SharedPage>,
    on_close: Option<CloseFn>,
}

impl MapState {
    fn is_used(&self) -> bool {
        !self.pages.is_empty() || self.on_close.is_some()
    }
}

/// A boxed `FnOnce()` with its type erased: the box's pointer and the
/// function that calls it (or only frees it).
///
/// # Invariants
///
/// `data` came from `KBox::into_raw` of a `KBox<F>` owned by this value,
/// and `finish` is `finish_close::<F>` for that same `F`; it is consumed
/// exactly once, by `call` or by `drop`.
struct CloseFn {
    data: *mut c_void,
    finish: unsafe fn(*mut c_void, bool),
}

// SAFETY: the closure it owns is `Send` (`CloseFn::new` requires it), so it
// may be called or dropped on any thread.
unsafe impl Send for CloseFn {}

impl CloseFn {
    fn new<F: FnOnce() + Send + 'static>(f: KBox<F>) -> CloseFn {
        // INVARIANT: the box's pointer, with the `finish` of its type.
        CloseFn {
            data: KBox::into_raw(f).cast(),
            finish: finish_close::<F>,
        }
    }

    fn call(self) {
        let this = ManuallyDrop::new(self);
        // SAFETY: `data` and `finish` match (type invariant); `this` is not
        // dropped, so the box is consumed here only.
        unsafe { (this.finish)(this.data, true) }
    }
}

impl Drop for CloseFn {
    fn drop(&mut self) {
        // SAFETY: `data` and `finish` match (type invariant), and `call`
        // did not consume the box (it does not drop `self`).
        unsafe { (self.finish)(self.data, false) }
    }
}

/// Takes the `F` back from its box and calls it if `call`, else drops it.
///
/// # Safety
///
/// `data` must come from `KBox::<F>::into_raw` and not be used afterwards.
unsafe fn finish_close<F: FnOnce()>(data: *mut c_void, call: bool) {
    // SAFETY: per the function's contract, the box is ours again.
    let f = KBox::into_inner(unsafe { KBox::from_raw(data.cast::<F>()) });
    if call {
        f();
    }
}

/// A device's `open`, from `chardev_glue.c` (misc core lock held).
///
/// # Safety
///
/// `dev` must be the context pointer of a registered [`MiscDev`] (a live
/// `DevCtx<T>`), and `file` writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_chardev_open(
    dev: *const c_void,
    file: *mut *mut c_void,
) -> c_int {
    // SAFETY: `dev` is a live `DevCtx<T>` (the function's contract), which
    // is `#[repr(C)]` with its `open` first.
    let open = unsafe { *dev.cast::<OpenFn>() };
    // SAFETY: `open` is `DevCtx::<T>::open_file` of the `T` that `dev` is a
    // `DevCtx` of, and `file` is writable (the function's contract).
    match unsafe { open(dev, file) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `ioctl` of an open file, from `chardev_glue.c`.
///
/// # Safety
///
/// `file` must be an object [`rdma_rs_chardev_open`] stored, not released.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_chardev_ioctl(
    file: *mut c_void,
    cmd: u32,
    arg: usize,
) -> isize {
    // SAFETY: `file` is a live `OpenFile` (the function's contract), and
    // its vtable's `ioctl` is that of its type.
    match unsafe { (vtable_of(file).ioctl)(file, cmd, arg) } {
        Ok(v) => v,
        Err(e) => e.to_errno() as isize,
    }
}

/// `read` of an open file, from `chardev_glue.c`.
///
/// # Safety
///
/// `file` as for [`rdma_rs_chardev_ioctl`], in a read call whose buffer is
/// `buf`, `count` bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_chardev_read(
    file: *mut c_void,
    buf: *mut u8,
    count: usize,
    nonblock: bool,
) -> isize {
    // The VFS has checked the range against the address-space limit;
    // every access through the slice checks it again.
    let buf = UserSlice::new(buf as usize, count);
    // SAFETY: `file` is a live `OpenFile` (the function's contract), and
    // its vtable's `read` is that of its type.
    match unsafe { (vtable_of(file).read)(file, buf, nonblock) } {
        Ok(n) => n.min(count) as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// `write` of an open file, from `chardev_glue.c`.
///
/// # Safety
///
/// `file` as for [`rdma_rs_chardev_ioctl`], in a write call whose buffer is
/// `buf`, `count` bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_chardev_write(
    file: *mut c_void,
    buf: *const u8,
    count: usize,
    nonblock: bool,
) -> isize {
    let buf = UserSlice::new(buf as usize, count);
    // SAFETY: `file` is a live `OpenFile` (the function's contract), and
    // its vtable's `write` is that of its type.
    match unsafe { (vtable_of(file).write)(file, buf, nonblock) } {
        Ok(n) => n.min(count) as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// `poll` of an open file, from `chardev_glue.c`.
///
/// # Safety
///
/// `file_ctx` as for [`rdma_rs_chardev_ioctl`]; `file` and `table` the
/// arguments of the poll call in progress on it.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_chardev_poll(
    file_ctx: *mut c_void,
    file: *mut bindings::file,
    table: *mut bindings::poll_table_struct,
) -> u32 {
    // SAFETY: `file_ctx` is a live `OpenFile` (the function's contract),
    // its vtable's `poll` is that of its type, and `file` and `table` are
    // the poll call's.
    unsafe { (vtable_of(file_ctx).poll)(file_ctx, file, table) }
}

/// `mmap` of an open file, from `chardev_glue.c`.
///
/// # Safety
///
/// `file` as for [`rdma_rs_chardev_ioctl`]; `vma` the VMA of the mmap call
/// in progress (mmap lock held for writing).
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_chardev_mmap(
    file: *mut c_void,
    vma: *mut bindings::vm_area_struct,
) -> c_int {
    let Some(raw) = NonNull::new(vma) else {
        return EINVAL.to_errno();
    };
    let state = MapState {
        users: AtomicUsize::new(1),
        pages: KVec::new(),
        on_close: None,
    };
    let Ok(state) = KBox::new(state, GFP_KERNEL) else {
        return ENOMEM.to_errno();
    };
    // INVARIANT: `raw` is the VMA of this mmap call (the function's
    // contract), and the `Vma` does not leave this frame (the handler only
    // borrows it).
    let mut vma = Vma { raw, state };
    // SAFETY: `file` is a live `OpenFile` (the function's contract), and
    // its vtable's `mmap` is that of its type.
    let ret = unsafe { (vtable_of(file).mmap)(file, &mut vma) };
    let Vma { raw, state } = vma;
    match ret {
        Ok(()) if state.is_used() => {
            // INVARIANT: counted once (`users` is 1), for this VMA.
            let state = KBox::into_raw(state);
            // SAFETY: the VMA is still in its successful mmap call; the
            // state is freed only by the close of the last VMA pointing at
            // it (`rdma_rs_chardev_vma_close`).
            unsafe { bindings::rdma_rs_vma_install(raw.as_ptr(), state.cast()) };
            0
        }
        Ok(()) => 0,
        Err(e) => {
            if !state.pages.is_empty() {
                // The failed mmap is undone after this returns; its pages
                // must not be reachable once `state` drops its references.
                // SAFETY: the VMA is in its mmap call with the lock held.
                unsafe { bindings::rdma_rs_vma_zap(raw.as_ptr()) };
            }
            drop(state);
            e.to_errno()
        }
    }
}

/// The last reference to an open file is gone, from `chardev_glue.c`.
///
/// # Safety
///
/// `file` must be an object [`rdma_rs_chardev_open`] stored; it is not
/// used again.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_chardev_release(file: *mut c_void) {
    // SAFETY: `file` is a live `OpenFile` (the function's contract).
    let release = unsafe { vtable_of(file).release };
    // SAFETY: `release` is that of the file's type; `file` came from
    // `KBox::into_raw` in `open_file` and is not used after this.
    unsafe { release(file) }
}

/// A VMA pointing at `state` was copied (`mremap`, or `fork` after
/// `MADV_DOFORK`), from `chardev_glue.c`.
///
/// # Safety
///
/// `state` must be the `vm_private_data` of a live VMA of ours.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_chardev_vma_open(state: *mut c_void) {
    // SAFETY: a VMA points at the state (the one copied), so it is live.
    let state = unsafe { &*state.cast::<MapState>() };
    // INVARIANT: one more VMA points at it.
    state.users.fetch_add(1, Ordering::Relaxed);
}

/// A VMA pointing at `state` goes, from `chardev_glue.c`.
///
/// # Safety
///
/// `state` must be the `vm_private_data` of a VMA of ours that is closing;
/// that VMA does not use it afterwards.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_chardev_vma_close(state: *mut c_void) {
    let state = state.cast::<MapState>();
    // SAFETY: the closing VMA still points at the state, so it is live.
    let users = unsafe { &(*state).users };
    if users.fetch_sub(1, Ordering::AcqRel) != 1 {
        return;
    }
    // SAFETY: that was the last VMA pointing at it (type invariant of
    // `MapState`), so nothing else refers to it; it came from
    // `KBox::into_raw` in `rdma_rs_chardev_mmap`. The mapping's page table
    // entries are gone (close comes after the unmap).
    let mut state = unsafe { KBox::from_raw(state) };
    if let Some(f) = state.on_close.take() {
        f.call();
    }
    // The pages' references go last, after the callback.
    drop(state);
}
