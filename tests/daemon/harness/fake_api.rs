//! The fake HyperFleet API (`sentinel::sim::api`) served on 127.0.0.1:0 for one test: the one
//! spawn helper of the API client, in-process daemon and process tests.

use sentinel::sim::api::{FakeApi, Fleet, RecordedRequest, ServerHandle, serve};
use std::sync::Arc;

/// A fake API on a free port; the server stops when this is dropped.
pub struct FakeServer {
    pub api: Arc<FakeApi>,
    pub base_url: String,
    _server: ServerHandle,
}

/// Serves `fleet` on a free port of 127.0.0.1.
pub async fn fake_api(fleet: Fleet) -> FakeServer {
    let api = Arc::new(FakeApi::new(Arc::new(fleet)));
    let (addr, server) = serve(api.clone(), "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("fake API listens");
    FakeServer {
        api,
        base_url: format!("http://{addr}"),
        _server: server,
    }
}

impl FakeServer {
    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.api.requests()
    }

    /// The list page numbers requested so far (the probe has none).
    pub fn pages_requested(&self) -> Vec<u32> {
        self.requests()
            .iter()
            .filter_map(RecordedRequest::page)
            .collect()
    }
}
