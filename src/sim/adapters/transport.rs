//! How a simulated adapter reaches the fake API: over HTTP like a real adapter, or by calling the
//! fleet directly (the same code the HTTP handlers call) when the simulation wants to spend its
//! CPU on the sentinel rather than on the adapters' requests.
//!
//! Takes the event an adapter received; gives the resource it names and a way to file a report.
//! Invariant: both transports answer the same: the resource JSON or [`TransportError::Gone`],
//! and for a report whether the API stored it (201) or discarded it (204).

use crate::sim::api::status::StatusReport;
use crate::sim::api::{Collection, Fleet, FleetError, PutOutcome};
use crate::sim::clock::parse_time;
use serde_json::Value as Json;
use std::sync::Arc;

/// The API path prefix of every resource.
const V1: &str = "/api/hyperfleet/v1";

/// Which resource an event is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Address {
    /// Its collection.
    pub collection: Collection,
    /// Its id.
    pub id: String,
    /// For a nodepool, the owning cluster's id.
    pub owner: Option<String>,
}

impl Address {
    /// Reads the resource out of a reconcile CloudEvent: `data.href` when it is an API path,
    /// else `data.id` with the kind from `data.kind` or the event type (and, for a nodepool,
    /// the cluster from `data.owner_references.id`).
    pub fn from_event(body: &[u8]) -> Option<Address> {
        let event: Json = serde_json::from_slice(body).ok()?;
        let data = &event["data"];
        let id = data["id"].as_str()?.to_string();
        if let Some(address) = data["href"].as_str().and_then(Address::from_href) {
            return (address.id == id).then_some(address);
        }
        let kind = match data["kind"].as_str() {
            Some(kind) => kind.to_string(),
            None => {
                let ty = event["type"].as_str()?;
                let kind = ty.strip_prefix("com.redhat.hyperfleet.")?;
                kind.strip_suffix(".reconcile")?.to_string()
            }
        };
        let collection = match kind.to_ascii_lowercase().as_str() {
            "cluster" => Collection::Clusters,
            "nodepool" => Collection::NodePools,
            _ => return None,
        };
        let owner = data
            .pointer("/owner_references/id")
            .and_then(Json::as_str)
            .map(str::to_string);
        if collection == Collection::NodePools && owner.is_none() {
            return None;
        }
        Some(Address {
            collection,
            id,
            owner,
        })
    }

    /// `/api/hyperfleet/v1/clusters/{id}` or `…/clusters/{cluster}/nodepools/{id}`.
    pub fn from_href(href: &str) -> Option<Address> {
        let path = href.split_once(V1).map_or(href, |(_, rest)| rest);
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        match parts.as_slice() {
            ["clusters", id] => Some(Address {
                collection: Collection::Clusters,
                id: id.to_string(),
                owner: None,
            }),
            ["clusters", owner, "nodepools", id] => Some(Address {
                collection: Collection::NodePools,
                id: id.to_string(),
                owner: Some(owner.to_string()),
            }),
            _ => None,
        }
    }

    /// The resource's API path.
    pub fn path(&self) -> String {
        match &self.owner {
            Some(owner) if self.collection == Collection::NodePools => {
                format!("{V1}/clusters/{owner}/nodepools/{}", self.id)
            }
            _ => format!("{V1}/clusters/{}", self.id),
        }
    }
}

/// Why an adapter could not answer an event.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The resource no longer exists (404).
    #[error("the resource is gone")]
    Gone,
    /// Any other failure.
    #[error("{0}")]
    Failed(String),
}

/// The adapters' way to the API.
#[derive(Clone, Debug)]
pub enum Transport {
    /// Real HTTP requests to the fake API at `base` (`http://127.0.0.1:PORT`).
    Http {
        /// The shared client.
        client: reqwest::Client,
        /// The API's base URL, without a trailing `/`.
        base: String,
    },
    /// Calls on the fleet itself.
    Direct(Arc<Fleet>),
}

impl Transport {
    /// An HTTP transport to `base`.
    pub fn http(base: &str) -> Result<Transport, TransportError> {
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| TransportError::Failed(e.to_string()))?;
        Ok(Transport::Http {
            client,
            base: base.trim_end_matches('/').to_string(),
        })
    }

    /// The resource at `address`.
    pub async fn get(&self, address: &Address) -> Result<Json, TransportError> {
        match self {
            Transport::Http { client, base } => {
                let url = format!("{base}{}", address.path());
                let response = client.get(url).send().await.map_err(failed)?;
                match response.status().as_u16() {
                    200 => response.json().await.map_err(failed),
                    404 => Err(TransportError::Gone),
                    code => Err(TransportError::Failed(format!("GET answered {code}"))),
                }
            }
            Transport::Direct(fleet) => {
                let found = fleet
                    .lookup(address.collection, &address.id)
                    .filter(|f| {
                        address.collection == Collection::Clusters
                            || f.owner.as_deref() == address.owner.as_deref()
                    })
                    .ok_or(TransportError::Gone)?;
                serde_json::from_slice(&found.body).map_err(failed)
            }
        }
    }

    /// Files `report` about `address`; true when stored (201), false when discarded (204).
    pub async fn put_status(
        &self,
        address: &Address,
        report: &Json,
    ) -> Result<bool, TransportError> {
        match self {
            Transport::Http { client, base } => {
                let url = format!("{base}{}/statuses", address.path());
                let response = client.put(url).json(report).send().await.map_err(failed)?;
                match response.status().as_u16() {
                    201 => Ok(true),
                    204 => Ok(false),
                    404 => Err(TransportError::Gone),
                    code => Err(TransportError::Failed(format!("PUT answered {code}"))),
                }
            }
            Transport::Direct(fleet) => {
                let report: StatusReport =
                    serde_json::from_value(report.clone()).map_err(failed)?;
                let observed = parse_time(&report.observed_time)
                    .ok_or_else(|| TransportError::Failed("bad observed_time".into()))?;
                match fleet.put_status(address.collection, &address.id, &report, observed) {
                    Ok(PutOutcome::Stored { .. }) => Ok(true),
                    Ok(PutOutcome::Discarded(_)) => Ok(false),
                    Err(FleetError::NotFound { .. }) => Err(TransportError::Gone),
                    Err(e) => Err(failed(e)),
                }
            }
        }
    }
}

fn failed(e: impl std::fmt::Display) -> TransportError {
    TransportError::Failed(e.to_string())
}
