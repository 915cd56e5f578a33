//! The points and continuous queries SWARM routes, each with the
//! application's data besides its position or rectangle.

use serde::{Deserialize, Serialize};

use super::geometry::Rect;

/// A data point: an id, a position, and what the application needs besides
/// (`data`: `()` for range queries, keywords for spatio-textual queries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point<P = ()> {
    /// The point's id.
    pub id: u64,
    /// x coordinate.
    pub x: f64,
    /// y coordinate.
    pub y: f64,
    /// The application's data.
    pub data: P,
}

impl Point {
    /// A point that carries nothing besides its position.
    pub fn new(id: u64, x: f64, y: f64) -> Self {
        Point { id, x, y, data: () }
    }
}

impl<P> Point<P> {
    /// A point carrying `data` (any payload; [`Point::new`] is the one
    /// carrying nothing).
    pub fn with_data(id: u64, x: f64, y: f64, data: P) -> Self {
        Point { id, x, y, data }
    }

    /// The same point carrying `data`.
    pub fn with<D>(self, data: D) -> Point<D> {
        Point {
            id: self.id,
            x: self.x,
            y: self.y,
            data,
        }
    }
}

/// A continuous query over a rectangle (border included): it sees every
/// point inside from its registration until its removal. `data` is what the
/// application needs besides (`()` for range queries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Query<Q = ()> {
    /// The query's id.
    pub id: u64,
    /// Its closed rectangle.
    pub rect: Rect,
    /// The application's data.
    pub data: Q,
}

impl Query {
    /// A query that carries nothing besides its rectangle.
    pub fn new(id: u64, rect: Rect) -> Self {
        Query { id, rect, data: () }
    }
}

impl<Q> Query<Q> {
    /// A query carrying `data` (any payload; [`Query::new`] is the one
    /// carrying nothing).
    pub fn with_data(id: u64, rect: Rect, data: Q) -> Self {
        Query { id, rect, data }
    }

    /// The same query carrying `data`.
    pub fn with<D>(self, data: D) -> Query<D> {
        Query {
            id: self.id,
            rect: self.rect,
            data,
        }
    }
}
