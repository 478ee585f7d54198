// SPDX-License-Identifier: GPL-2.0

//! Clients written in C: `ib_register_peer_memory_client` and
//! `ib_unregister_peer_memory_client` (`c_api.c`) reach the broker through
//! the core's C ABI layer (`rdma::kshim::peer_abi`), which hands over a
//! [`CClient`]. [`CAdapter`] makes it a [`PeerClient`] like any other: its
//! pages are the `struct sg_table` the client fills.

use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::kshim::pages::{page_size, PeerSg, SharedPage};
use rdma::kshim::peer_abi::{CClient, CContext, CRegistrar};

use crate::client::{CoreContext, Erase, PeerClient};
use crate::registry::{self, ErasedClient};

/// A C client as a [`PeerClient`].
pub(crate) struct CAdapter(Arc<CClient>);

impl PeerClient for CAdapter {
    type Context = CContext;
    type Pages = (PeerSg, u64);

    fn acquire(&self, addr: u64, len: u64) -> Option<CContext> {
        self.0.acquire(addr, len).ok().flatten()
    }

    fn get_pages(
        &self,
        ctx: &CContext,
        addr: u64,
        len: u64,
        write: bool,
        core: CoreContext,
    ) -> Result<(PeerSg, u64)> {
        let sg = PeerSg::new()?;
        self.0.get_pages(addr, len, write, &sg, *ctx, core.0)?;
        // The pages the table may cover: from `addr` rounded down to the
        // client's page size to the end rounded up to it. The page size
        // is the client's word: checked before any use.
        match span_pages(addr, len, self.0.page_size(*ctx)) {
            Some(n) => Ok((sg, n)),
            None => {
                self.0.put_pages(&sg, *ctx);
                registry::log_memory_refused(self.0.name(), "absurd page size (EINVAL)");
                Err(EINVAL)
            }
        }
    }

    fn dma_map(&self, ctx: &CContext, pages: &(PeerSg, u64)) -> Result<KVVec<SharedPage>> {
        let nmap = self.0.dma_map(&pages.0, *ctx)?;
        let list = pages.0.collect(nmap, pages.1 as usize);
        if list.is_err() {
            self.0.dma_unmap(&pages.0, *ctx);
        }
        list
    }

    fn dma_unmap(&self, ctx: &CContext, pages: &(PeerSg, u64)) {
        self.0.dma_unmap(&pages.0, *ctx);
    }

    fn put_pages(&self, ctx: &CContext, pages: &(PeerSg, u64)) {
        self.0.put_pages(&pages.0, *ctx);
    }

    fn page_size(&self, ctx: &CContext) -> u64 {
        self.0.page_size(*ctx)
    }

    fn release(&self, ctx: &CContext) {
        self.0.release(*ctx);
    }

    fn invalidate_unmaps(&self) -> bool {
        self.0.unmaps()
    }

    fn needs_dma_device(&self) -> bool {
        !self.0.cpu_pages()
    }
}

/// The kernel pages of `[addr, addr + len)` rounded out to the client's
/// page size `cps`; `None` if `cps` is not one the core uses or the range
/// does not fit.
fn span_pages(addr: u64, len: u64, cps: u64) -> Option<u64> {
    if !registry::valid_page_size(cps) {
        return None;
    }
    let start = addr & !(cps - 1);
    let end = addr.checked_add(len)?.checked_next_multiple_of(cps)?;
    Some((end - start) / page_size() as u64)
}

/// The broker's side of the C ABI: registered C clients by handle.
#[pin_data]
pub(crate) struct CClients {
    #[pin]
    list: Mutex<KVec<(usize, Arc<CClient>)>>,
}

impl CClients {
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(CClients {
            list <- new_mutex!(KVec::new(), "peer_mem::CClients::list"),
        })
    }
}

impl CRegistrar for CClients {
    fn register(&self, client: Arc<CClient>, invalidates: bool) -> Result<usize> {
        let name = client.name();
        let v = client.version();
        let vlen = core::cmp::min(v.len(), 15);
        let erased: Arc<dyn ErasedClient> = Arc::new(Erase(CAdapter(client.clone())), GFP_KERNEL)?;
        let (handle, _reg) = registry::register(erased, name, &v[..vlen], invalidates)?;
        if let Err(e) = self.list.lock().push((handle, client), GFP_KERNEL) {
            let _ = registry::unregister(handle);
            return Err(e.into());
        }
        Ok(handle)
    }

    fn unregister(&self, handle: usize) -> Result<Arc<CClient>> {
        let client = {
            let mut list = self.list.lock();
            let i = list.iter().position(|e| e.0 == handle).ok_or(EINVAL)?;
            rdma::kshim::vec::remove(&mut list, i).ok_or(EINVAL)?.1
        };
        registry::unregister(handle)?;
        Ok(client)
    }

    fn invalidate(&self, handle: usize, core_context: u64) -> Result {
        // Only a C client's handle: the callback is theirs.
        if !self.list.lock().iter().any(|e| e.0 == handle) {
            return Err(EINVAL);
        }
        registry::find(handle)?.invalidate(core_context)
    }
}
