//! A listing in the order a request's `order` asks for, as the API's `ORDER BY` gives it: by
//! `id` (what a sentinel listing by id asks for) or by `created_time` (the store's insertion
//! order, reversed for `desc`).

use super::{Collection, Fleet, ListFilter, ListPage};

/// The order of a listing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Insertion order (`created_time`, ascending): what a request without `order` gets here.
    #[default]
    Created,
    /// `created_time desc`.
    CreatedDesc,
    /// `id` (`id asc`).
    Id,
    /// `id desc`.
    IdDesc,
}

impl Order {
    /// The order of the `order` parameter (`field` or `field asc|desc`), or the API's 400
    /// detail for one it refuses.
    pub fn parse(text: Option<&str>) -> Result<Order, String> {
        let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
            return Ok(Order::Created);
        };
        let bad = || format!("invalid order format '{text}': expected 'field' or 'field asc|desc'");
        let mut words = text.split_whitespace();
        let field = words.next().ok_or_else(bad)?;
        let desc = match (words.next(), words.next()) {
            (None, _) => false,
            (Some("asc"), None) => false,
            (Some("desc"), None) => true,
            _ => return Err(bad()),
        };
        if !field
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(bad());
        }
        match (field, desc) {
            ("id", false) => Ok(Order::Id),
            ("id", true) => Ok(Order::IdDesc),
            ("created_time", false) => Ok(Order::Created),
            ("created_time", true) => Ok(Order::CreatedDesc),
            _ => Err("invalid field in search or order query".into()),
        }
    }
}

impl Fleet {
    /// [`Fleet::list`] in `order`.
    pub fn list_ordered(
        &self,
        collection: Collection,
        filter: &ListFilter,
        order: Order,
        page: u32,
        size: u32,
    ) -> ListPage {
        if order == Order::Created {
            return self.list(collection, filter, page, size);
        }
        let store = self.read(collection);
        let now = self.now();
        let mut kept: Vec<&super::Entry> = store
            .items
            .iter()
            .filter(|e| filter.keeps(e, now))
            .collect();
        match order {
            Order::Id => kept.sort_unstable_by(|a, b| a.id.cmp(&b.id)),
            Order::IdDesc => kept.sort_unstable_by(|a, b| b.id.cmp(&a.id)),
            Order::CreatedDesc => kept.reverse(),
            Order::Created => {}
        }
        let skip = (page.max(1) as usize - 1).saturating_mul(size as usize);
        ListPage {
            items: kept
                .iter()
                .skip(skip)
                .take(size as usize)
                .map(|e| e.body.clone())
                .collect(),
            total: kept.len() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_parse_as_the_api_reads_them() {
        assert_eq!(Order::parse(None), Ok(Order::Created));
        assert_eq!(Order::parse(Some(" ")), Ok(Order::Created));
        assert_eq!(Order::parse(Some("id")), Ok(Order::Id));
        assert_eq!(Order::parse(Some(" id  asc ")), Ok(Order::Id));
        assert_eq!(Order::parse(Some("id desc")), Ok(Order::IdDesc));
        assert_eq!(
            Order::parse(Some("created_time desc")),
            Ok(Order::CreatedDesc)
        );
        for bad in ["id up", "id; drop", "Id", "id asc x"] {
            assert!(
                Order::parse(Some(bad))
                    .unwrap_err()
                    .contains("invalid order"),
                "{bad}"
            );
        }
        assert!(
            Order::parse(Some("nope"))
                .unwrap_err()
                .contains("invalid field")
        );
    }
}
