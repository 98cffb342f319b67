//! A read-only table of the encoder: built at run time, or compiled into the binary.
//!
//! Built tables are ordinary vectors. The bundled encodings' tables are built by the
//! build script and embedded as they lie in memory, so a process reads them in place
//! from the binary's read-only pages: nothing is built at run time, only the pages a
//! count touches become resident, and every process shares them.

use std::ops::{Deref, DerefMut};

/// The table's items are read through `ptr` and `len` alone, whichever storage
/// holds them: the encoder's hot loops index tables millions of times a second, and
/// a branch on the storage at every read cost them 10-15%.
pub struct Table<T: 'static> {
    ptr: *const T,
    len: usize,
    /// The items of a table built at run time; empty for an embedded one.
    built: Vec<T>,
    embedded: bool,
}

// SAFETY: a Table owns its built items or borrows 'static ones it never writes;
// it is as shareable as a Vec<T> or a &'static [T].
unsafe impl<T: Send> Send for Table<T> {}
unsafe impl<T: Sync> Sync for Table<T> {}

impl<T> Table<T> {
    /// A table read in place from the binary.
    pub fn embedded(items: &'static [T]) -> Self {
        Table {
            ptr: items.as_ptr(),
            len: items.len(),
            built: Vec::new(),
            embedded: true,
        }
    }

    /// The vector of a table under construction; the table's view of it is
    /// brought up to date when the returned guard goes.
    ///
    /// # Panics
    /// On an embedded table, which is read-only; only construction mutates tables.
    pub fn vec_mut(&mut self) -> Growing<'_, T> {
        assert!(!self.embedded, "toktok: an embedded table is read-only");
        Growing(self)
    }

    fn sync(&mut self) {
        self.ptr = self.built.as_ptr();
        self.len = self.built.len();
    }
}

/// A built table's vector, lent out for growing (see [`Table::vec_mut`]).
pub struct Growing<'a, T: 'static>(&'a mut Table<T>);

impl<T> Deref for Growing<'_, T> {
    type Target = Vec<T>;

    fn deref(&self) -> &Vec<T> {
        &self.0.built
    }
}

impl<T> DerefMut for Growing<'_, T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0.built
    }
}

impl<T> Drop for Growing<'_, T> {
    fn drop(&mut self) {
        self.0.sync();
    }
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Vec::new().into()
    }
}

impl<T> Deref for Table<T> {
    type Target = [T];

    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: ptr and len describe the built vector (kept in sync by `sync`
        // after every change of its length or buffer) or a 'static slice.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T> DerefMut for Table<T> {
    /// Writing items in place (construction only) does not move the buffer.
    fn deref_mut(&mut self) -> &mut [T] {
        assert!(!self.embedded, "toktok: an embedded table is read-only");
        &mut self.built
    }
}

impl<T> From<Vec<T>> for Table<T> {
    fn from(built: Vec<T>) -> Self {
        let mut table = Table {
            ptr: std::ptr::null(),
            len: 0,
            built,
            embedded: false,
        };
        table.sync();
        table
    }
}

impl<T> FromIterator<T> for Table<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        iter.into_iter().collect::<Vec<T>>().into()
    }
}

/// Plain integers (and arrays of them): every bit pattern is a valid value and the
/// layout is fixed, so a table of them can be written as bytes and read back in place.
///
/// # Safety
/// Implement only for types with no padding, no invalid bit patterns and a layout
/// that does not depend on the compiler's choices.
pub unsafe trait Plain: Copy + 'static {}
unsafe impl Plain for u8 {}
unsafe impl Plain for u32 {}
unsafe impl Plain for u64 {}
unsafe impl Plain for [u32; 2] {}

/// The bytes of `items`, as they lie in memory.
pub fn bytes_of<T: Plain>(items: &[T]) -> &[u8] {
    // SAFETY: `T: Plain` has no padding, so every byte of the slice is initialised.
    unsafe { std::slice::from_raw_parts(items.as_ptr().cast::<u8>(), std::mem::size_of_val(items)) }
}

/// `len` items of `T` read in place from `bytes`, which must be aligned for `T`.
pub fn items_of<T: Plain>(bytes: &'static [u8], len: usize) -> Option<&'static [T]> {
    let size = len.checked_mul(std::mem::size_of::<T>())?;
    if bytes.len() < size || bytes.as_ptr().align_offset(std::mem::align_of::<T>()) != 0 {
        return None;
    }
    // SAFETY: in bounds and aligned (checked above); `T: Plain` accepts any bits;
    // the bytes are 'static and never written.
    Some(unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), len) })
}
