//! What [`crate::SetList`] and [`crate::DropList`] share: lists stored by column that hand out
//! their rows as values built on demand.

use serde::{Serialize, Serializer};

/// A list stored by column whose rows are built when read.
pub trait RowList {
    /// The value one row is built into.
    type Row;

    /// Number of rows.
    fn len(&self) -> usize;

    /// Row `i`, if there is one.
    fn row(&self, i: usize) -> Option<Self::Row>;

    /// True when the list has no rows.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Iterator over a [`RowList`]'s rows, built one at a time.
#[derive(Debug, Clone)]
pub struct Rows<'a, L> {
    list: &'a L,
    range: std::ops::Range<usize>,
}

impl<'a, L: RowList> Rows<'a, L> {
    pub(crate) fn new(list: &'a L) -> Self {
        Rows {
            list,
            range: 0..list.len(),
        }
    }
}

impl<L: RowList> Iterator for Rows<'_, L> {
    type Item = L::Row;

    fn next(&mut self) -> Option<L::Row> {
        self.range.next().and_then(|i| self.list.row(i))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }
}

impl<L: RowList> DoubleEndedIterator for Rows<'_, L> {
    fn next_back(&mut self) -> Option<L::Row> {
        self.range.next_back().and_then(|i| self.list.row(i))
    }
}

impl<L: RowList> ExactSizeIterator for Rows<'_, L> {}

/// The list as a sequence of its rows (the same JSON as a `Vec` of them).
pub(crate) fn serialize_rows<L, S>(list: &L, s: S) -> Result<S::Ok, S::Error>
where
    L: RowList,
    L::Row: Serialize,
    S: Serializer,
{
    s.collect_seq(Rows::new(list))
}

/// Whether the list holds exactly `other`'s rows.
pub(crate) fn rows_eq<L>(list: &L, other: &[L::Row]) -> bool
where
    L: RowList,
    L::Row: PartialEq,
{
    list.len() == other.len() && Rows::new(list).zip(other).all(|(a, b)| a == *b)
}

/// The trait and the iteration, serialization and comparison impls of a row list type with
/// inherent `len` and `get`.
macro_rules! row_list {
    ($list:ty, $row:ty) => {
        impl $crate::rows::RowList for $list {
            type Row = $row;

            fn len(&self) -> usize {
                <$list>::len(self)
            }

            fn row(&self, i: usize) -> Option<$row> {
                self.get(i)
            }
        }

        impl<'a> IntoIterator for &'a $list {
            type Item = $row;
            type IntoIter = $crate::rows::Rows<'a, $list>;

            fn into_iter(self) -> Self::IntoIter {
                $crate::rows::Rows::new(self)
            }
        }

        /// As a list of its rows (the same JSON as a `Vec` of them).
        impl serde::Serialize for $list {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $crate::rows::serialize_rows(self, s)
            }
        }

        impl PartialEq<[$row]> for $list {
            fn eq(&self, other: &[$row]) -> bool {
                $crate::rows::rows_eq(self, other)
            }
        }
    };
}
pub(crate) use row_list;
