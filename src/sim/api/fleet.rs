//! The fake API's in-memory store: resources per collection in creation order, indexed by id,
//! each kept as the JSON bytes the API serves plus the adapter reports filed about it.
//!
//! Takes resources as JSON (tests, [`sample_resource`]) and the writes of the API: adapter
//! reports ([`Fleet::put_status`]), spec changes ([`Fleet::patch`]) and deletions
//! ([`Fleet::delete`]); after each it recomputes the resource's conditions (see [`super::status`])
//! and hard-deletes a resource marked deleted once its `Reconciled` condition turns True.
//!
//! Invariants: every stored resource is a JSON object with a string `id`, unique within its
//! collection; listing order is insertion order (the API's default `order=created_time`); the
//! served bytes and the metadata read from them ([`Meta`]) always describe the same version.
//! Resources are kept serialized so that listing a page is copying bytes, which lets one fake
//! API serve a million resources to a sentinel at full speed.

use super::status::{self, AdapterStatus, AggregateInput, Discard, StatusReport};
use crate::cel::time::Timestamp;
use crate::sim::clock::{Clock, WallClock, format_time, parse_time, to_timestamp};
use crate::tsl::Tsl;
use serde_json::{Value as Json, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

mod ordered;
mod rows;
mod samples;
mod varied;

pub use ordered::Order;
pub use rows::{ConditionRow, Meta, Stored};
use rows::{Matches, REMEMBERED, conditions};
pub use samples::{realistic_resource, sample_id, sample_resource};
pub use varied::varied_resource;

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

    fn slot(self) -> usize {
        match self {
            Collection::Clusters => 0,
            Collection::NodePools => 1,
        }
    }
}

/// Why a resource could not be stored or changed.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum FleetError {
    /// Resources are JSON objects.
    #[error("resource is not a JSON object")]
    NotAnObject,
    /// Resources are found by their string `id`.
    #[error("resource has no string id")]
    MissingId,
    /// No resource with that id.
    #[error("{kind} with id='{id}' not found")]
    NotFound {
        /// The resource kind.
        kind: &'static str,
        /// The id asked for.
        id: String,
    },
    /// A patch that is not `{spec?, labels?}` with at least one of them.
    #[error("invalid patch: {0}")]
    BadPatch(String),
    /// The resource is marked for deletion and takes no more changes.
    #[error("{kind} with id='{id}' is being deleted")]
    Deleted {
        /// The resource kind.
        kind: &'static str,
        /// The id.
        id: String,
    },
}

/// One page of a listing.
#[derive(Debug)]
pub struct ListPage {
    /// The serialized resources on the page, in collection order.
    pub items: Vec<Arc<[u8]>>,
    /// How many resources match the filter in the whole collection.
    pub total: u64,
}

/// What a listing keeps.
#[derive(Clone, Debug)]
pub struct ListFilter {
    /// The search every kept resource satisfies (`Some(true)` at the fleet clock's now); the
    /// fake API's routes parse the request's `search` with the kind filter the API adds.
    pub search: Tsl,
    /// Only resources whose `owner_references.id` is this.
    pub owner: Option<String>,
}

impl Default for ListFilter {
    fn default() -> ListFilter {
        ListFilter {
            search: Tsl::True,
            owner: None,
        }
    }
}

impl ListFilter {
    fn keeps_all(&self) -> bool {
        self.search == Tsl::True && self.owner.is_none()
    }

    fn keeps(&self, entry: &Entry, now: Timestamp) -> bool {
        keeps(&self.search, self.owner.as_deref(), entry, now)
    }
}

fn keeps(search: &Tsl, owner: Option<&str>, entry: &Entry, now: Timestamp) -> bool {
    rows::owner_matches(owner, entry.meta.owner.as_ref())
        && (*search == Tsl::True || search.eval(&entry.stored(), now) == Some(true))
}

/// A resource looked up by id.
#[derive(Clone, Debug)]
pub struct Found {
    /// The resource as served.
    pub body: Arc<[u8]>,
    /// Its `owner_references.id`, if any.
    pub owner: Option<Arc<str>>,
}

/// What the API does with an adapter report.
// One outcome per adapter report, moved straight into the response: boxing the larger variant
// would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum PutOutcome {
    /// Stored (201); `hard_deleted` when it completed the resource's deletion.
    Stored {
        /// The stored status.
        status: AdapterStatus,
        /// Whether the resource is now gone.
        hard_deleted: bool,
    },
    /// Accepted but not stored (204).
    Discarded(Discard),
}

/// How far a collection is from convergence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Resources stored (including those marked deleted).
    pub total: usize,
    /// Resources not marked deleted whose `Reconciled` is True at their generation.
    pub reconciled: usize,
    /// Resources marked deleted and not yet hard-deleted.
    pub deleting: usize,
}

impl Progress {
    /// Every resource reconciled and no deletion pending.
    pub fn converged(&self) -> bool {
        self.deleting == 0 && self.reconciled == self.total
    }
}

#[derive(Debug)]
struct Entry {
    id: Arc<str>,
    body: Arc<[u8]>,
    meta: Meta,
    statuses: Vec<AdapterStatus>,
}

impl Entry {
    fn new(resource: &Json) -> Result<Entry, FleetError> {
        let id = Arc::from(resource_id(resource)?);
        Ok(Entry {
            id,
            body: serialize(resource),
            meta: Meta::of(resource),
            statuses: Vec::new(),
        })
    }

    fn json(&self) -> Json {
        // The body was serialized from a `Json` by this module, so it always parses.
        serde_json::from_slice(&self.body).unwrap_or(Json::Null)
    }

    fn store(&mut self, resource: &Json) {
        self.body = serialize(resource);
        self.meta = Meta::of(resource);
    }

    fn stored(&self) -> Stored<'_> {
        Stored {
            id: &self.id,
            meta: &self.meta,
            body: &self.body,
        }
    }
}

fn serialize(resource: &Json) -> Arc<[u8]> {
    // Serializing a `Value` cannot fail: its map keys are strings.
    Arc::from(serde_json::to_vec(resource).unwrap_or_default())
}

#[derive(Debug, Default)]
struct Store {
    items: Vec<Entry>,
    index: HashMap<Arc<str>, usize>,
    /// The searches answered lately, most recent last (see [`rows::Matches`]).
    matches: Mutex<Vec<Matches>>,
}

impl Store {
    /// Brings the remembered searches up to date after the entry `id` changed in place.
    fn changed(&mut self, id: &str, now: Timestamp) {
        let Some(&pos) = self.index.get(id) else {
            return;
        };
        let entry = &self.items[pos];
        for m in self.matches.get_mut().unwrap_or_else(|e| e.into_inner()) {
            let keeps = keeps(&m.search, m.owner.as_deref(), entry, now);
            m.changed(pos, keeps);
        }
    }

    /// Brings the remembered searches up to date after an entry was appended.
    fn appended(&mut self, now: Timestamp) {
        let pos = self.items.len() - 1;
        let entry = &self.items[pos];
        for m in self.matches.get_mut().unwrap_or_else(|e| e.into_inner()) {
            let keeps = keeps(&m.search, m.owner.as_deref(), entry, now);
            m.appended(pos, keeps);
        }
    }

    fn entry_mut(&mut self, collection: Collection, id: &str) -> Result<&mut Entry, FleetError> {
        match self.index.get(id) {
            Some(&pos) => Ok(&mut self.items[pos]),
            None => Err(not_found(collection, id)),
        }
    }

    fn remove(&mut self, id: &str) -> Option<Entry> {
        let pos = self.index.remove(id)?;
        let removed = self.items.remove(pos);
        for m in self.matches.get_mut().unwrap_or_else(|e| e.into_inner()) {
            m.removed(pos);
        }
        for later in &self.items[pos..] {
            // Index entries after the removed one shift down by one.
            if let Some(p) = self.index.get_mut(&later.id) {
                *p -= 1;
            }
        }
        Some(removed)
    }
}

fn not_found(collection: Collection, id: &str) -> FleetError {
    FleetError::NotFound {
        kind: collection.kind(),
        id: id.to_string(),
    }
}

/// The fleet: every collection's resources. Shared between the fake API and whoever drives it.
#[derive(Debug)]
pub struct Fleet {
    stores: [RwLock<Store>; 2],
    required: RwLock<[Vec<String>; 2]>,
    clock: Arc<dyn Clock>,
}

impl Default for Fleet {
    fn default() -> Fleet {
        Fleet::new()
    }
}

/// Who the fake API says changed a resource.
pub const ACTOR: &str = "sim@example.com";

impl Fleet {
    /// An empty fleet on the wall clock, requiring the real API's adapters
    /// ([`status::CLUSTER_ADAPTERS`], [`status::NODEPOOL_ADAPTERS`]).
    pub fn new() -> Fleet {
        Fleet::with_clock(Arc::new(WallClock))
    }

    /// An empty fleet whose timestamps come from `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Fleet {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        Fleet {
            stores: Default::default(),
            required: RwLock::new([
                names(&status::CLUSTER_ADAPTERS),
                names(&status::NODEPOOL_ADAPTERS),
            ]),
            clock,
        }
    }

    /// The clock the fleet stamps times with.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Sets the adapters whose reports make a resource of `collection` reconciled.
    pub fn set_required_adapters(&self, collection: Collection, adapters: Vec<String>) {
        let mut required = self.required.write().unwrap_or_else(|e| e.into_inner());
        required[collection.slot()] = adapters;
    }

    /// The adapters whose reports make a resource of `collection` reconciled.
    pub fn required_adapters(&self, collection: Collection) -> Vec<String> {
        let required = self.required.read().unwrap_or_else(|e| e.into_inner());
        required[collection.slot()].clone()
    }

    /// Stores `resource`, replacing the one with the same id (which keeps its position and
    /// its adapter reports).
    pub fn insert(&self, collection: Collection, resource: Json) -> Result<(), FleetError> {
        self.insert_entry(collection, Entry::new(&resource)?);
        Ok(())
    }

    /// Appends resources `0..count` built by `make`, serializing them on every core. Ids must
    /// be new and unique (as [`sample_resource`] makes them).
    pub fn populate(
        &self,
        collection: Collection,
        count: u64,
        make: impl Fn(u64) -> Json + Sync,
    ) -> Result<(), FleetError> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
        let chunk = count.div_ceil(threads.max(1)).max(1);
        let built: Vec<Result<Vec<Entry>, FleetError>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..count)
                .step_by(chunk as usize)
                .map(|start| {
                    let make = &make;
                    scope.spawn(move || {
                        (start..(start + chunk).min(count))
                            .map(|i| Entry::new(&make(i)))
                            .collect::<Result<Vec<Entry>, FleetError>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or(Err(FleetError::NotAnObject)))
                .collect()
        });
        let mut store = self.write(collection);
        store
            .matches
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        store.items.reserve(count as usize);
        store.index.reserve(count as usize);
        for entries in built {
            for entry in entries? {
                let pos = store.items.len();
                store.index.insert(entry.id.clone(), pos);
                store.items.push(entry);
            }
        }
        Ok(())
    }

    fn insert_entry(&self, collection: Collection, entry: Entry) {
        let now = self.now();
        let mut store = self.write(collection);
        match store.index.get(&entry.id) {
            Some(&pos) => {
                let old = &mut store.items[pos];
                old.body = entry.body;
                old.meta = entry.meta;
                store.changed(&entry.id, now);
            }
            None => {
                let pos = store.items.len();
                store.index.insert(entry.id.clone(), pos);
                store.items.push(entry);
                store.appended(now);
            }
        }
    }

    fn now(&self) -> Timestamp {
        to_timestamp(self.clock.now())
    }

    /// The resource with `id`, decoded.
    pub fn get(&self, collection: Collection, id: &str) -> Option<Arc<Json>> {
        let store = self.read(collection);
        store
            .index
            .get(id)
            .map(|&pos| Arc::new(store.items[pos].json()))
    }

    /// The resource with `id` as served, and its owner.
    pub fn lookup(&self, collection: Collection, id: &str) -> Option<Found> {
        let store = self.read(collection);
        let entry = &store.items[*store.index.get(id)?];
        Some(Found {
            body: entry.body.clone(),
            owner: entry.meta.owner.clone(),
        })
    }

    /// What the fleet read from the resource with `id`.
    pub fn meta(&self, collection: Collection, id: &str) -> Option<Meta> {
        let store = self.read(collection);
        Some(store.items[*store.index.get(id)?].meta.clone())
    }

    /// Changes the resource with `id` in place, without recomputing its conditions; false when
    /// there is none. If `change` removes or alters the `id`, the change is rejected and the
    /// resource kept as it was.
    pub fn update(&self, collection: Collection, id: &str, change: impl FnOnce(&mut Json)) -> bool {
        let mut store = self.write(collection);
        let Ok(entry) = store.entry_mut(collection, id) else {
            return false;
        };
        let mut resource = entry.json();
        change(&mut resource);
        if resource_id(&resource).ok() == Some(id) {
            entry.store(&resource);
            store.changed(id, self.now());
        }
        true
    }

    /// Removes and returns the resource with `id`.
    pub fn remove(&self, collection: Collection, id: &str) -> Option<Arc<Json>> {
        let removed = self.write(collection).remove(id)?;
        Some(Arc::new(removed.json()))
    }

    /// How many resources the collection holds.
    pub fn len(&self, collection: Collection) -> usize {
        self.read(collection).items.len()
    }

    /// Whether the collection is empty.
    pub fn is_empty(&self, collection: Collection) -> bool {
        self.len(collection) == 0
    }

    /// The ids of the collection, in listing order.
    pub fn ids(&self, collection: Collection) -> Vec<Arc<str>> {
        let store = self.read(collection);
        store.items.iter().map(|e| e.id.clone()).collect()
    }

    /// Page `page` (from 1) of `size` among the resources `filter` keeps, and their total.
    pub fn list(
        &self,
        collection: Collection,
        filter: &ListFilter,
        page: u32,
        size: u32,
    ) -> ListPage {
        let store = self.read(collection);
        let skip = (page.max(1) as usize - 1).saturating_mul(size as usize);
        let size = size as usize;
        if filter.keeps_all() {
            let items = store.items.iter().skip(skip).take(size);
            return ListPage {
                items: items.map(|e| e.body.clone()).collect(),
                total: store.items.len() as u64,
            };
        }
        let now = self.now();
        let Some(key) = Matches::key_of(&filter.search, filter.owner.as_deref()) else {
            let mut items = Vec::with_capacity(size.min(store.items.len()));
            let mut total = 0u64;
            for entry in store.items.iter().filter(|e| filter.keeps(e, now)) {
                if total as usize >= skip && items.len() < size {
                    items.push(entry.body.clone());
                }
                total += 1;
            }
            return ListPage { items, total };
        };
        let mut remembered = store.matches.lock().unwrap_or_else(|e| e.into_inner());
        let found = match remembered.iter().position(|m| m.key == key) {
            Some(i) => remembered.remove(i),
            None => Matches {
                key,
                search: filter.search.clone(),
                owner: filter.owner.clone(),
                positions: (0..store.items.len())
                    .filter(|&i| filter.keeps(&store.items[i], now))
                    .map(|i| i as u32)
                    .collect(),
            },
        };
        let page = found.positions.iter().skip(skip).take(size);
        let items = page
            .map(|&p| store.items[p as usize].body.clone())
            .collect();
        let total = found.positions.len() as u64;
        if remembered.len() >= REMEMBERED {
            remembered.remove(0);
        }
        remembered.push(found);
        ListPage { items, total }
    }

    /// Counts how many resources of `collection` are reconciled and how many are being deleted.
    pub fn progress(&self, collection: Collection) -> Progress {
        let store = self.read(collection);
        let mut progress = Progress {
            total: store.items.len(),
            ..Progress::default()
        };
        for entry in &store.items {
            if entry.meta.deleted {
                progress.deleting += 1;
            } else if entry.meta.reconciled {
                progress.reconciled += 1;
            }
        }
        progress
    }

    /// The adapter reports filed about the resource with `id`.
    pub fn statuses(&self, collection: Collection, id: &str) -> Option<Vec<AdapterStatus>> {
        let store = self.read(collection);
        Some(store.items[*store.index.get(id)?].statuses.clone())
    }

    /// Files an adapter report (`PUT …/statuses`), recomputes the conditions, and hard-deletes
    /// the resource when that completes its deletion.
    pub fn put_status(
        &self,
        collection: Collection,
        id: &str,
        report: &StatusReport,
        observed_time: chrono::DateTime<chrono::Utc>,
    ) -> Result<PutOutcome, FleetError> {
        let required = self.required_adapters(collection);
        let mut store = self.write(collection);
        let entry = store.entry_mut(collection, id)?;
        let previous = entry
            .statuses
            .iter()
            .position(|s| s.adapter == report.adapter);
        let generation = entry.meta.generation;
        let accepted = status::accept(
            report,
            observed_time,
            previous.map(|i| &entry.statuses[i]),
            generation,
        );
        let stored = match accepted {
            Ok(stored) => stored,
            Err(discard) => return Ok(PutOutcome::Discarded(discard)),
        };
        match previous {
            Some(i) => entry.statuses[i] = stored.clone(),
            None => entry.statuses.push(stored.clone()),
        }
        let mut resource = entry.json();
        reaggregate(&mut resource, &entry.statuses, &required);
        entry.store(&resource);
        let hard_deleted = entry.meta.deleted && entry.meta.reconciled;
        if hard_deleted {
            store.remove(id);
        } else {
            store.changed(id, self.now());
        }
        Ok(PutOutcome::Stored {
            status: stored,
            hard_deleted,
        })
    }

    /// Applies `PATCH` (`{spec?, labels?}`): a changed spec bumps the generation; the
    /// conditions are recomputed. Returns the resource as served.
    pub fn patch(
        &self,
        collection: Collection,
        id: &str,
        patch: &Json,
    ) -> Result<Arc<[u8]>, FleetError> {
        let (spec, labels) = parse_patch(patch)?;
        let required = self.required_adapters(collection);
        let now = format_time(self.clock.now());
        let mut store = self.write(collection);
        let entry = store.entry_mut(collection, id)?;
        if entry.meta.deleted {
            let (kind, id) = (collection.kind(), id.to_string());
            return Err(FleetError::Deleted { kind, id });
        }
        let mut resource = entry.json();
        if let Some(spec) = spec.filter(|s| resource.get("spec") != Some(s)) {
            resource["spec"] = spec.clone();
            resource["generation"] = json!(entry.meta.generation + 1);
        }
        if let Some(labels) = labels {
            resource["labels"] = labels.clone();
        }
        resource["updated_time"] = json!(now);
        resource["updated_by"] = json!(ACTOR);
        reaggregate(&mut resource, &entry.statuses, &required);
        entry.store(&resource);
        let body = entry.body.clone();
        store.changed(id, self.now());
        Ok(body)
    }

    /// Applies `DELETE`: marks the resource deleted (`deleted_time`, generation + 1) and, for a
    /// cluster, its nodepools too. Deleting a resource already marked changes nothing. Returns
    /// the resource as served.
    pub fn delete(&self, collection: Collection, id: &str) -> Result<Arc<[u8]>, FleetError> {
        let now = format_time(self.clock.now());
        let body = self.mark_deleted(collection, id, &now)?;
        if collection == Collection::Clusters {
            let filter = ListFilter {
                owner: Some(id.to_string()),
                ..ListFilter::default()
            };
            let owned: Vec<Arc<str>> = {
                let store = self.read(Collection::NodePools);
                let now = self.now();
                let kept = store.items.iter().filter(|e| filter.keeps(e, now));
                kept.map(|e| e.id.clone()).collect()
            };
            for nodepool in owned {
                // A nodepool hard-deleted meanwhile needs no mark.
                let _ = self.mark_deleted(Collection::NodePools, &nodepool, &now);
            }
        }
        Ok(body)
    }

    fn mark_deleted(
        &self,
        collection: Collection,
        id: &str,
        now: &str,
    ) -> Result<Arc<[u8]>, FleetError> {
        let required = self.required_adapters(collection);
        let mut store = self.write(collection);
        let entry = store.entry_mut(collection, id)?;
        if entry.meta.deleted {
            return Ok(entry.body.clone());
        }
        let mut resource = entry.json();
        resource["generation"] = json!(entry.meta.generation + 1);
        resource["deleted_time"] = json!(now);
        resource["deleted_by"] = json!(ACTOR);
        resource["updated_time"] = json!(now);
        resource["updated_by"] = json!(ACTOR);
        reaggregate(&mut resource, &entry.statuses, &required);
        entry.store(&resource);
        let body = entry.body.clone();
        store.changed(id, self.now());
        Ok(body)
    }

    /// Recomputes the conditions of the resource with `id` from its stored reports, as the API
    /// does after every write.
    pub fn reaggregate(&self, collection: Collection, id: &str) -> Result<(), FleetError> {
        let required = self.required_adapters(collection);
        let mut store = self.write(collection);
        let entry = store.entry_mut(collection, id)?;
        let mut resource = entry.json();
        reaggregate(&mut resource, &entry.statuses, &required);
        entry.store(&resource);
        store.changed(id, self.now());
        Ok(())
    }

    fn read(&self, collection: Collection) -> RwLockReadGuard<'_, Store> {
        // Writers never panic while holding the lock except inside a caller's `update` closure,
        // and then the store is unchanged, so a poisoned lock still guards a consistent store.
        self.stores[collection.slot()]
            .read()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self, collection: Collection) -> RwLockWriteGuard<'_, Store> {
        self.stores[collection.slot()]
            .write()
            .unwrap_or_else(|e| e.into_inner())
    }
}

/// Replaces `status.conditions` of `resource` by the aggregation of `statuses`.
fn reaggregate(resource: &mut Json, statuses: &[AdapterStatus], required: &[String]) {
    let updated_time = resource["updated_time"]
        .as_str()
        .and_then(parse_time)
        .unwrap_or_default();
    let previous = conditions(resource).to_vec();
    let conditions = status::aggregate(&AggregateInput {
        generation: resource["generation"].as_i64().unwrap_or(0),
        updated_time,
        deleted: resource.get("deleted_time").is_some_and(|t| t.is_string()),
        previous: &previous,
        required,
        statuses,
    });
    match resource.get_mut("status").and_then(Json::as_object_mut) {
        Some(status) => {
            status.insert("conditions".into(), Json::Array(conditions));
        }
        None => resource["status"] = json!({ "conditions": conditions }),
    }
}

fn parse_patch(patch: &Json) -> Result<(Option<&Json>, Option<&Json>), FleetError> {
    let obj = patch
        .as_object()
        .ok_or_else(|| FleetError::BadPatch("the body is not a JSON object".into()))?;
    if let Some(key) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "spec" | "labels"))
    {
        return Err(FleetError::BadPatch(format!("unknown field {key:?}")));
    }
    if obj.is_empty() {
        return Err(FleetError::BadPatch("give spec or labels".into()));
    }
    let spec = obj.get("spec");
    if spec.is_some_and(|s| !s.is_object()) {
        return Err(FleetError::BadPatch("spec must be an object".into()));
    }
    let labels = obj.get("labels");
    let string_map = |l: &Json| {
        l.as_object()
            .is_some_and(|m| m.values().all(Json::is_string))
    };
    if labels.is_some_and(|l| !string_map(l)) {
        return Err(FleetError::BadPatch(
            "labels must map names to strings".into(),
        ));
    }
    Ok((spec, labels))
}

fn resource_id(resource: &Json) -> Result<&str, FleetError> {
    let obj = resource.as_object().ok_or(FleetError::NotAnObject)?;
    obj.get("id")
        .and_then(Json::as_str)
        .ok_or(FleetError::MissingId)
}

#[cfg(test)]
mod tests;
