//! [`NameTable`]: ids by name, for maps whose owner already holds each id's name.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

/// Ids by name, holding the ids alone: a name is read back from its owner (`name_of`, which
/// must give each filed id's name) to compare it, and hashed again when the table grows. 5
/// bytes a bucket where a `HashMap<Arc<str>, u32>` takes 25: at 1,000,000 names (2^21
/// buckets) 10 MB against 52 MB.
#[derive(Debug, Default, Clone)]
pub struct NameTable {
    ids: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

impl NameTable {
    pub fn with_capacity(capacity: usize) -> Self {
        Self { ids: HashTable::with_capacity(capacity), hasher: Default::default() }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// The id filed under `name`.
    pub fn get<'a>(&self, name: &str, name_of: impl Fn(u32) -> &'a str) -> Option<u32> {
        self.ids.find(self.hasher.hash_one(name), |id| name_of(*id) == name).copied()
    }

    /// Files `id` under its name (`name_of(id)` must give `name` already); the id filed
    /// under that name before, if any.
    pub fn insert<'a>(&mut self, id: u32, name: &str, name_of: impl Fn(u32) -> &'a str) -> Option<u32> {
        let Self { ids, hasher } = self;
        let hash = hasher.hash_one(name);
        match ids.entry(hash, |other| name_of(*other) == name, |other| hasher.hash_one(name_of(*other))) {
            Entry::Occupied(mut filed) => Some(std::mem::replace(filed.get_mut(), id)),
            Entry::Vacant(vacant) => {
                vacant.insert(id);
                None
            }
        }
    }

    /// Forgets the id filed under `name` (while `name_of` still gives it), and gives it.
    pub fn remove<'a>(&mut self, name: &str, name_of: impl Fn(u32) -> &'a str) -> Option<u32> {
        let hash = self.hasher.hash_one(name);
        self.ids.find_entry(hash, |id| name_of(*id) == name).ok().map(|filed| filed.remove().0)
    }

    /// Every filed id, in no order.
    #[cfg(test)]
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.ids.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_replaced_and_forgotten_through_growth() {
        let names: Vec<String> = (0..5_000).map(|n| format!("item-{n}.md")).collect();
        let name_of = |id: u32| names[id as usize].as_str();
        let mut table = NameTable::default();
        for (id, name) in names.iter().enumerate() {
            assert_eq!(table.insert(id as u32, name, name_of), None);
        }
        assert_eq!(table.len(), names.len());
        assert!(names.iter().enumerate().all(|(id, name)| table.get(name, name_of) == Some(id as u32)));
        assert_eq!(table.get("item-5000.md", name_of), None);
        for id in (0..names.len() as u32).step_by(2) {
            assert_eq!(table.remove(&names[id as usize], name_of), Some(id));
        }
        assert_eq!(table.remove("item-0.md", name_of), None, "already forgotten");
        assert_eq!(table.len(), names.len() / 2);
        for (id, name) in names.iter().enumerate() {
            let wanted = (id % 2 == 1).then_some(id as u32);
            assert_eq!(table.get(name, name_of), wanted, "{name}");
        }
        let mut ids: Vec<u32> = table.ids().collect();
        ids.sort_unstable();
        assert_eq!(ids, (1..names.len() as u32).step_by(2).collect::<Vec<_>>());
    }
}
