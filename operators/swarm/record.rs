//! SWARM's input records: points, query registrations and removals, valid
//! by construction so that nothing reaching the dispatcher can fail.

use serde::{Deserialize, Serialize};

use crate::common::Error;

use super::app::{Point, Query};
use super::geometry::{Grid, OutOfBounds, Rect};

/// One record of SWARM's input. Made only by [`Record::point`],
/// [`Record::query`] and [`Record::removal`] (or deserialized, which checks
/// the same), so its coordinates are finite and its rectangle is not
/// inverted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Item<P, Q>", into = "Item<P, Q>")]
#[serde(bound(
    serialize = "P: Serialize + Clone, Q: Serialize + Clone",
    deserialize = "P: Deserialize<'de>, Q: Deserialize<'de>"
))]
pub struct Record<P = (), Q = ()>(Item<P, Q>);

/// What a record is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Item<P = (), Q = ()> {
    /// A data point.
    Point(Point<P>),
    /// A continuous query, from its epoch on.
    Query(Query<Q>),
    /// The removal of the query with this id, from its epoch on.
    Removal(u64),
}

/// What a record is, in the order an epoch's records are applied:
/// registrations, then removals, then points (so a point sees the queries
/// of its own epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Query,
    Removal,
    Point,
}

impl<P, Q> Item<P, Q> {
    /// Its kind, to order an epoch's records by.
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Item::Query(_) => Kind::Query,
            Item::Removal(_) => Kind::Removal,
            Item::Point(_) => Kind::Point,
        }
    }
}

impl<P, Q> Record<P, Q> {
    /// A point of the space `grid`; an error if a coordinate is not finite,
    /// or lies outside the space under [`OutOfBounds::Reject`]. Under
    /// [`OutOfBounds::Clamp`] the point keeps its coordinates and belongs to
    /// the nearest cell.
    pub fn point(grid: &Grid, outside: OutOfBounds, point: Point<P>) -> Result<Self, Error> {
        grid.cell_of(point.x, point.y, outside)?;
        Ok(Record(Item::Point(point)))
    }

    /// A query of the space `grid`; an error if its rectangle is not finite,
    /// is inverted, or lies wholly outside the space under
    /// [`OutOfBounds::Reject`].
    pub fn query(grid: &Grid, outside: OutOfBounds, query: Query<Q>) -> Result<Self, Error> {
        let Rect { x1, y1, x2, y2 } = query.rect;
        Rect::new(x1, y1, x2, y2)?;
        grid.cells_of(&query.rect, outside)?;
        Ok(Record(Item::Query(query)))
    }

    /// The removal of query `id`. Removing a query that is not registered is
    /// counted (in `SwarmHandles::refused` of the worker that is the query's
    /// home) and otherwise ignored.
    pub fn removal(id: u64) -> Self {
        Record(Item::Removal(id))
    }

    /// What the record is.
    pub fn item(&self) -> &Item<P, Q> {
        &self.0
    }

    /// What the record is, by value.
    pub fn into_item(self) -> Item<P, Q> {
        self.0
    }
}

impl<P, Q> TryFrom<Item<P, Q>> for Record<P, Q> {
    type Error = Error;

    /// The grid-independent checks: finite coordinates, a rectangle not inverted.
    fn try_from(item: Item<P, Q>) -> Result<Self, Error> {
        match &item {
            Item::Point(point) if !(point.x.is_finite() && point.y.is_finite()) => Err(Error::invalid(
                "point",
                format!("({}, {}) is not finite", point.x, point.y),
            )),
            Item::Query(query) => {
                let Rect { x1, y1, x2, y2 } = query.rect;
                Rect::new(x1, y1, x2, y2)?;
                Ok(Record(item))
            }
            _ => Ok(Record(item)),
        }
    }
}

impl<P, Q> From<Record<P, Q>> for Item<P, Q> {
    fn from(record: Record<P, Q>) -> Self {
        record.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Grid {
        Grid::new(Rect::new(-10.0, -10.0, 10.0, 10.0).unwrap(), 4, 4).unwrap()
    }

    #[test]
    fn constructors_refuse_what_could_not_be_routed() {
        let g = grid();
        let reject = OutOfBounds::Reject;
        assert!(<Record>::point(&g, reject, Point::new(1, -3.0, 9.5)).is_ok());
        for (x, y) in [(f64::NAN, 0.0), (0.0, f64::INFINITY), (11.0, 0.0)] {
            let error = <Record>::point(&g, reject, Point::new(1, x, y))
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("point") || error.contains('x') || error.contains('y'),
                "{error}"
            );
        }
        // Outside, but clamped: kept as written.
        let clamped = <Record>::point(&g, OutOfBounds::Clamp, Point::new(1, 11.0, 0.0)).unwrap();
        assert!(matches!(clamped.item(), Item::Point(p) if p.x == 11.0));
        assert!(<Record>::point(&g, OutOfBounds::Clamp, Point::new(1, f64::NAN, 0.0)).is_err());

        let inverted = Rect {
            x1: 5.0,
            y1: 0.0,
            x2: 1.0,
            y2: 1.0,
        };
        let error = <Record>::query(&g, reject, Query::new(2, inverted))
            .unwrap_err()
            .to_string();
        assert!(error.contains("inverted"), "{error}");
        let outside = Rect::new(20.0, 20.0, 30.0, 30.0).unwrap();
        assert!(<Record>::query(&g, reject, Query::new(2, outside)).is_err());
        assert!(<Record>::query(&g, OutOfBounds::Clamp, Query::new(2, outside)).is_ok());
        let nan = Rect {
            x1: f64::NAN,
            ..Rect::new(0.0, 0.0, 1.0, 1.0).unwrap()
        };
        assert!(<Record>::query(&g, OutOfBounds::Clamp, Query::new(2, nan)).is_err());
    }

    #[test]
    fn deserializing_checks_as_the_constructors_do() {
        let good: Record = <Record>::point(&grid(), OutOfBounds::Reject, Point::new(7, 1.0, 2.0)).unwrap();
        let json = serde_json::to_string(&good).unwrap();
        assert_eq!(serde_json::from_str::<Record>(&json).unwrap(), good);
        let inverted = r#"{"Query":{"id":1,"rect":{"x1":5.0,"y1":0.0,"x2":1.0,"y2":1.0},"data":null}}"#;
        assert!(serde_json::from_str::<Record>(inverted).is_err());
    }
}
