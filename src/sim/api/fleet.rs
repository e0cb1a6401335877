//! The fake API's in-memory store: resources per collection as JSON objects, in creation order,
//! indexed by id.
//!
//! Invariant: every stored resource is a JSON object with a string `id`, unique within its
//! collection; listing order is insertion order (the API's default `order=created_time`).

use serde_json::{Value as Json, json};
use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A resource collection of the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Collection {
    /// `/clusters`, kind `Cluster`.
    Clusters,
    /// `/nodepools`, kind `NodePool`.
    NodePools,
}

impl Collection {
    /// The collection's path segment.
    pub fn path(self) -> &'static str {
        match self {
            Collection::Clusters => "clusters",
            Collection::NodePools => "nodepools",
        }
    }

    /// The `kind` of its resources.
    pub fn kind(self) -> &'static str {
        match self {
            Collection::Clusters => "Cluster",
            Collection::NodePools => "NodePool",
        }
    }

    /// The collection of a path segment, if it is one.
    pub fn from_path(segment: &str) -> Option<Collection> {
        match segment {
            "clusters" => Some(Collection::Clusters),
            "nodepools" => Some(Collection::NodePools),
            _ => None,
        }
    }
}

/// Why a resource could not be stored.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum FleetError {
    /// Resources are JSON objects.
    #[error("resource is not a JSON object")]
    NotAnObject,
    /// Resources are found by their string `id`.
    #[error("resource has no string id")]
    MissingId,
}

/// One page of a listing.
#[derive(Debug)]
pub struct ListPage {
    /// The resources on the page, in collection order.
    pub items: Vec<Arc<Json>>,
    /// How many resources match the filter in the whole collection.
    pub total: u64,
}

/// The fleet: every collection's resources. Shared between the fake API and whoever drives it.
#[derive(Debug, Default)]
pub struct Fleet {
    clusters: RwLock<Store>,
    nodepools: RwLock<Store>,
}

#[derive(Debug, Default)]
struct Store {
    items: Vec<Arc<Json>>,
    index: HashMap<String, usize>,
}

impl Fleet {
    /// An empty fleet.
    pub fn new() -> Fleet {
        Fleet::default()
    }

    /// Stores `resource`, replacing the one with the same id (which keeps its position).
    pub fn insert(&self, collection: Collection, resource: Json) -> Result<(), FleetError> {
        let id = resource_id(&resource)?.to_string();
        let mut store = self.write(collection);
        match store.index.get(&id) {
            Some(&pos) => store.items[pos] = Arc::new(resource),
            None => {
                let pos = store.items.len();
                store.items.push(Arc::new(resource));
                store.index.insert(id, pos);
            }
        }
        Ok(())
    }

    /// The resource with `id`.
    pub fn get(&self, collection: Collection, id: &str) -> Option<Arc<Json>> {
        let store = self.read(collection);
        store.index.get(id).map(|&pos| store.items[pos].clone())
    }

    /// Changes the resource with `id` in place; false when there is none. If `change` removes
    /// or alters the `id`, the change is rejected and the resource kept as it was.
    pub fn update(&self, collection: Collection, id: &str, change: impl FnOnce(&mut Json)) -> bool {
        let mut store = self.write(collection);
        let Some(&pos) = store.index.get(id) else {
            return false;
        };
        let mut resource = Json::clone(&store.items[pos]);
        change(&mut resource);
        if resource_id(&resource).ok() == Some(id) {
            store.items[pos] = Arc::new(resource);
        }
        true
    }

    /// Removes and returns the resource with `id`.
    pub fn remove(&self, collection: Collection, id: &str) -> Option<Arc<Json>> {
        let mut store = self.write(collection);
        let pos = store.index.remove(id)?;
        let removed = store.items.remove(pos);
        let Store { items, index } = &mut *store;
        for later in &items[pos..] {
            // Index entries after the removed one shift down by one.
            if let Some(p) = resource_id(later).ok().and_then(|id| index.get_mut(id)) {
                *p -= 1;
            }
        }
        Some(removed)
    }

    /// How many resources the collection holds.
    pub fn len(&self, collection: Collection) -> usize {
        self.read(collection).items.len()
    }

    /// Whether the collection is empty.
    pub fn is_empty(&self, collection: Collection) -> bool {
        self.len(collection) == 0
    }

    /// Page `page` (from 1) of `size` among the resources `keep` accepts, and their total.
    pub fn list(
        &self,
        collection: Collection,
        keep: impl Fn(&Json) -> bool,
        page: u32,
        size: u32,
    ) -> ListPage {
        let store = self.read(collection);
        let skip = (page.max(1) as usize - 1).saturating_mul(size as usize);
        let mut items = Vec::with_capacity((size as usize).min(store.items.len()));
        let mut total = 0u64;
        for resource in store.items.iter().filter(|r| keep(r)) {
            if total as usize >= skip && items.len() < size as usize {
                items.push(resource.clone());
            }
            total += 1;
        }
        ListPage { items, total }
    }

    fn read(&self, collection: Collection) -> RwLockReadGuard<'_, Store> {
        // Writers never panic while holding the lock except inside a caller's `update` closure,
        // and then the store is unchanged, so a poisoned lock still guards a consistent store.
        self.lock(collection)
            .read()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self, collection: Collection) -> RwLockWriteGuard<'_, Store> {
        self.lock(collection)
            .write()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn lock(&self, collection: Collection) -> &RwLock<Store> {
        match collection {
            Collection::Clusters => &self.clusters,
            Collection::NodePools => &self.nodepools,
        }
    }
}

fn resource_id(resource: &Json) -> Result<&str, FleetError> {
    let obj = resource.as_object().ok_or(FleetError::NotAnObject)?;
    obj.get("id")
        .and_then(Json::as_str)
        .ok_or(FleetError::MissingId)
}

/// A deterministic, API-shaped resource number `index` of `collection`: a UUID-like id, name,
/// href, generation 1, creation times one second apart, the mandatory `Reconciled` and
/// `LastKnownReconciled` conditions (True at generation 1) and `labels`. Nodepools belong to the
/// cluster with the same index.
pub fn sample_resource(collection: Collection, index: u64, labels: &[(&str, &str)]) -> Json {
    let id = sample_id(collection, index);
    let time = sample_time(index);
    let condition = |ty: &str| {
        json!({
            "type": ty, "status": "True", "reason": "Reconciled", "message": "all adapters reported",
            "observed_generation": 1, "created_time": time, "last_updated_time": time,
            "last_transition_time": time,
        })
    };
    let labels: serde_json::Map<String, Json> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), Json::from(*v)))
        .collect();
    let mut resource = json!({
        "kind": collection.kind(),
        "id": id,
        "href": format!("/api/hyperfleet/v1/{}/{id}", collection.path()),
        "name": format!("{}-{index}", &collection.path()[..collection.path().len() - 1]),
        "labels": labels,
        "spec": {},
        "generation": 1,
        "created_time": time,
        "updated_time": time,
        "created_by": "sim@example.com",
        "updated_by": "sim@example.com",
        "status": {"conditions": [condition("Reconciled"), condition("LastKnownReconciled")]},
    });
    if collection == Collection::NodePools {
        let owner = sample_id(Collection::Clusters, index);
        resource["owner_references"] = json!({
            "id": owner, "kind": "Cluster", "href": format!("/api/hyperfleet/v1/clusters/{owner}"),
        });
    }
    resource
}

/// The id [`sample_resource`] gives resource `index` of `collection`.
pub fn sample_id(collection: Collection, index: u64) -> String {
    let tag = match collection {
        Collection::Clusters => 0xc1u8,
        Collection::NodePools => 0x9e,
    };
    format!(
        "019466a0-00{tag:02x}-7000-8000-{:012x}",
        index & 0xffff_ffff_ffff
    )
}

fn sample_time(index: u64) -> String {
    let base = chrono::DateTime::from_timestamp(1_735_689_600, 0).unwrap_or_default();
    let seconds = i64::try_from(index).unwrap_or(i64::MAX / 2) % (100 * 365 * 86_400);
    (base + chrono::TimeDelta::seconds(seconds)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet_of(n: u64) -> Fleet {
        let fleet = Fleet::new();
        for i in 0..n {
            let shard = if i % 2 == 0 { "even" } else { "odd" };
            fleet
                .insert(
                    Collection::Clusters,
                    sample_resource(Collection::Clusters, i, &[("shard", shard)]),
                )
                .unwrap();
        }
        fleet
    }

    #[test]
    fn lists_pages_of_the_filtered_collection() {
        let fleet = fleet_of(7);
        let page = fleet.list(Collection::Clusters, |_| true, 3, 3);
        assert_eq!((page.items.len(), page.total), (1, 7));
        let odd = |r: &Json| r["labels"]["shard"] == "odd";
        let page = fleet.list(Collection::Clusters, odd, 1, 2);
        assert_eq!(page.total, 3);
        assert_eq!(page.items[0]["id"], sample_id(Collection::Clusters, 1));
        assert!(
            fleet
                .list(Collection::Clusters, |_| true, 9, 3)
                .items
                .is_empty()
        );
    }

    #[test]
    fn insert_update_remove_keep_the_index_consistent() {
        let fleet = fleet_of(4);
        let id1 = sample_id(Collection::Clusters, 1);
        let id3 = sample_id(Collection::Clusters, 3);
        assert!(fleet.remove(Collection::Clusters, &id1).is_some());
        assert!(fleet.update(Collection::Clusters, &id3, |r| r["generation"] = json!(2)));
        assert_eq!(
            fleet.get(Collection::Clusters, &id3).unwrap()["generation"],
            2
        );
        assert!(fleet.update(Collection::Clusters, &id3, |r| r["id"] = json!("other")));
        assert!(fleet.get(Collection::Clusters, &id3).is_some());
        assert_eq!(fleet.len(Collection::Clusters), 3);
        assert_eq!(
            fleet.insert(Collection::Clusters, json!([])),
            Err(FleetError::NotAnObject)
        );
        assert_eq!(
            fleet.insert(Collection::Clusters, json!({})),
            Err(FleetError::MissingId)
        );
        assert!(fleet.is_empty(Collection::NodePools));
    }

    #[test]
    fn sample_resources_decode_cleanly() {
        let r =
            crate::resource::Resource::from_json(sample_resource(Collection::NodePools, 5, &[]));
        assert_eq!(r.kind.as_deref().unwrap(), "NodePool");
        assert_eq!(r.created_time.as_deref().unwrap(), "2025-01-01T00:00:05Z");
        assert_eq!(
            r.condition("Reconciled").unwrap().observed_generation,
            Ok(1)
        );
    }
}
