//! Process sets: subsets of the world's ranks that run collectives among
//! themselves. Set 0 is the global set. Adding and removing are collective over all
//! ranks (every rank passes the same ranks). Ranks are global ranks.
use crate::error::{check, Error, Result};
use crate::ffi;
use std::os::raw::c_int;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcessSet {
    id: i32,
}

pub(crate) fn c_ranks(ranks: &[usize], what: &str) -> Result<Vec<c_int>> {
    ranks
        .iter()
        .map(|&r| {
            c_int::try_from(r).map_err(|_| Error::invalid(format!("{what}: rank {r} is out of range")))
        })
        .collect()
}

impl ProcessSet {
    /// All ranks (HVD_GLOBAL_PROCESS_SET).
    pub const GLOBAL: ProcessSet = ProcessSet { id: ffi::HVD_GLOBAL_PROCESS_SET };

    /// The set with this id (from another binding, or `process_sets()`).
    pub fn from_id(id: i32) -> ProcessSet {
        ProcessSet { id }
    }

    pub fn id(self) -> i32 {
        self.id
    }

    /// Creates a set of these global ranks (ascending, no duplicates). Collective.
    pub fn add(ranks: &[usize]) -> Result<ProcessSet> {
        let ranks = c_ranks(ranks, "ProcessSet::add")?;
        let count = c_int::try_from(ranks.len())
            .map_err(|_| Error::invalid("ProcessSet::add: too many ranks".to_string()))?;
        let mut id = -1;
        // SAFETY: ranks holds count entries; id is a valid out-pointer.
        check(unsafe { ffi::hvd_add_process_set(ranks.as_ptr(), count, &mut id) })?;
        Ok(ProcessSet { id })
    }

    /// Removes the set. Collective.
    pub fn remove(self) -> Result<()> {
        check(unsafe { ffi::hvd_remove_process_set(self.id) })
    }

    /// This process's rank within the set; None if not a member or unknown set.
    pub fn rank(self) -> Option<usize> {
        usize::try_from(unsafe { ffi::hvd_process_set_rank(self.id) }).ok()
    }

    /// Number of ranks in the set; None for an unknown set or before init.
    pub fn size(self) -> Option<usize> {
        usize::try_from(unsafe { ffi::hvd_process_set_size(self.id) }).ok()
    }

    /// Whether this process is a member; None for an unknown set or before init.
    pub fn included(self) -> Option<bool> {
        match unsafe { ffi::hvd_process_set_included(self.id) } {
            1 => Some(true),
            0 => Some(false),
            _ => None,
        }
    }

    /// The set's members (global ranks, ascending).
    pub fn ranks(self) -> Result<Vec<usize>> {
        let mut capacity: c_int = self.size().unwrap_or(0) as c_int + 1;
        loop {
            let mut ranks = vec![0 as c_int; capacity as usize];
            let mut count: c_int = 0;
            // SAFETY: ranks holds capacity entries.
            check(unsafe {
                ffi::hvd_process_set_ranks(self.id, ranks.as_mut_ptr(), capacity, &mut count)
            })?;
            if count <= capacity {
                ranks.truncate(count.max(0) as usize);
                return Ok(ranks.into_iter().map(|r| r as usize).collect());
            }
            capacity = count;
        }
    }

    /// Returns when every rank of the set has called it.
    pub fn barrier(self) -> Result<()> {
        check(unsafe { ffi::hvd_barrier(self.id) })
    }
}

/// The ids of every existing set (ascending; the global set first).
pub fn process_sets() -> Result<Vec<ProcessSet>> {
    let mut capacity: c_int = 16;
    loop {
        let mut ids = vec![0i32; capacity as usize];
        let mut count: c_int = 0;
        // SAFETY: ids holds capacity entries.
        check(unsafe { ffi::hvd_process_set_ids(ids.as_mut_ptr(), capacity, &mut count) })?;
        if count <= capacity {
            ids.truncate(count.max(0) as usize);
            return Ok(ids.into_iter().map(ProcessSet::from_id).collect());
        }
        capacity = count;
    }
}

/// As `init`, and creates static sets of these global ranks: their ids are 1, 2, ...
/// in order. Collective; every rank passes the same sets.
pub fn init_with_process_sets(sets: &[&[usize]]) -> Result<Vec<ProcessSet>> {
    let ranks = sets
        .iter()
        .map(|s| c_ranks(s, "init_with_process_sets"))
        .collect::<Result<Vec<_>>>()?;
    let pointers: Vec<*const c_int> = ranks.iter().map(|r| r.as_ptr()).collect();
    let counts: Vec<c_int> = ranks.iter().map(|r| r.len() as c_int).collect();
    let nsets = c_int::try_from(sets.len())
        .map_err(|_| Error::invalid("init_with_process_sets: too many sets".to_string()))?;
    // SAFETY: pointers[i] holds counts[i] ranks; all outlive the call.
    check(unsafe { ffi::hvd_init_with_process_sets(nsets, pointers.as_ptr(), counts.as_ptr()) })?;
    Ok((1..=nsets).map(ProcessSet::from_id).collect())
}
