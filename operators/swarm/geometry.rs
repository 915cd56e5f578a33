//! Space, grid cells and cell-aligned rectangles.
//!
//! The space is a rectangle divided into `columns × rows` equal cells. x maps
//! to columns, y to rows; row 0 holds the smallest y (the paper's "top" row)
//! and column 0 the smallest x, so a rectangle's "top-left" cell is its
//! smallest (row, column). A coordinate on a cell border belongs to the
//! higher cell, except on the space's upper border, which belongs to the last
//! cell.

use serde::{Deserialize, Serialize};

use crate::common::Error;

/// What to do with a coordinate outside the space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum OutOfBounds {
    /// Reject it with an error.
    #[default]
    Reject,
    /// Move it onto the nearest point of the space.
    Clamp,
}

/// An axis-aligned rectangle with finite corners, `x1 ≤ x2` and `y1 ≤ y2`
/// (closed: it contains its border).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rect {
    /// Smallest x.
    pub x1: f64,
    /// Smallest y.
    pub y1: f64,
    /// Largest x.
    pub x2: f64,
    /// Largest y.
    pub y2: f64,
}

fn finite(what: &str, value: f64) -> Result<f64, Error> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(Error::invalid(what, format!("{value} is not a finite number")))
    }
}

impl Rect {
    /// A rectangle; an error for a non-finite corner or an inverted one.
    pub fn new(x1: f64, y1: f64, x2: f64, y2: f64) -> Result<Self, Error> {
        for (name, value) in [("x1", x1), ("y1", y1), ("x2", x2), ("y2", y2)] {
            finite(&format!("rectangle {name}"), value)?;
        }
        if x1 > x2 || y1 > y2 {
            return Err(Error::invalid(
                "rectangle",
                format!("({x1}, {y1})–({x2}, {y2}) is inverted: need x1 ≤ x2 and y1 ≤ y2"),
            ));
        }
        Ok(Rect { x1, y1, x2, y2 })
    }

    /// Whether the point lies in the rectangle (border included).
    pub fn contains(&self, x: f64, y: f64) -> bool {
        self.x1 <= x && x <= self.x2 && self.y1 <= y && y <= self.y2
    }
}

/// A cell of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Cell {
    /// Row index (from the smallest y).
    pub row: u32,
    /// Column index (from the smallest x).
    pub col: u32,
}

/// A rectangle of whole cells, rows `row0..=row1` and columns `col0..=col1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CellRect {
    /// First row.
    pub row0: u32,
    /// First column.
    pub col0: u32,
    /// Last row (inclusive).
    pub row1: u32,
    /// Last column (inclusive).
    pub col1: u32,
}

impl CellRect {
    /// The rectangle from `first` to `last` (inclusive); `None` if inverted.
    pub fn spanning(first: Cell, last: Cell) -> Option<Self> {
        (first.row <= last.row && first.col <= last.col).then_some(CellRect {
            row0: first.row,
            col0: first.col,
            row1: last.row,
            col1: last.col,
        })
    }

    /// Number of rows.
    pub fn rows(&self) -> u32 {
        self.row1 - self.row0 + 1
    }

    /// Number of columns.
    pub fn cols(&self) -> u32 {
        self.col1 - self.col0 + 1
    }

    /// Number of cells.
    pub fn area(&self) -> u64 {
        u64::from(self.rows()) * u64::from(self.cols())
    }

    /// Whether `cell` is inside.
    pub fn contains(&self, cell: Cell) -> bool {
        self.row0 <= cell.row && cell.row <= self.row1 && self.col0 <= cell.col && cell.col <= self.col1
    }

    /// Whether the two rectangles share a cell.
    pub fn overlaps(&self, other: &CellRect) -> bool {
        self.row0 <= other.row1 && other.row0 <= self.row1 && self.col0 <= other.col1 && other.col0 <= self.col1
    }

    /// The cells the two rectangles share, if any.
    pub fn intersection(&self, other: &CellRect) -> Option<CellRect> {
        self.overlaps(other).then(|| CellRect {
            row0: self.row0.max(other.row0),
            col0: self.col0.max(other.col0),
            row1: self.row1.min(other.row1),
            col1: self.col1.min(other.col1),
        })
    }

    /// This rectangle in coordinates relative to `origin`'s first cell.
    pub fn relative_to(&self, origin: &CellRect) -> CellRect {
        CellRect {
            row0: self.row0 - origin.row0,
            col0: self.col0 - origin.col0,
            row1: self.row1 - origin.row0,
            col1: self.col1 - origin.col0,
        }
    }

    /// The smallest rectangle holding both.
    pub fn bounding(&self, other: &CellRect) -> CellRect {
        CellRect {
            row0: self.row0.min(other.row0),
            col0: self.col0.min(other.col0),
            row1: self.row1.max(other.row1),
            col1: self.col1.max(other.col1),
        }
    }

    /// Its cells, row by row.
    pub fn iter(&self) -> impl Iterator<Item = Cell> + use<> {
        let (col0, col1) = (self.col0, self.col1);
        (self.row0..=self.row1).flat_map(move |row| (col0..=col1).map(move |col| Cell { row, col }))
    }

    /// The smallest rectangle holding both, if their union is exactly that
    /// rectangle (they are edge-adjacent with a common full side).
    pub fn union_if_rectangle(&self, other: &CellRect) -> Option<CellRect> {
        let side_by_side = self.row0 == other.row0
            && self.row1 == other.row1
            && (self.col1 + 1 == other.col0 || other.col1 + 1 == self.col0);
        let stacked = self.col0 == other.col0
            && self.col1 == other.col1
            && (self.row1 + 1 == other.row0 || other.row1 + 1 == self.row0);
        (side_by_side || stacked).then(|| self.bounding(other))
    }
}

/// The space and its grid of cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grid {
    bounds: Rect,
    columns: u32,
    rows: u32,
    // Cells per unit of x and of y: routing multiplies rather than divides.
    x_scale: f64,
    y_scale: f64,
}

/// Most cells a grid may have (the index keeps one entry per cell).
pub(crate) const MAX_CELLS: u64 = 1 << 26;

impl Grid {
    /// A grid of `columns × rows` cells over `bounds`, which must have a
    /// positive width and height.
    pub fn new(bounds: Rect, columns: u32, rows: u32) -> Result<Self, Error> {
        // Rect's fields are public, so a rectangle may not have come from
        // Rect::new: an infinite space would put every point in one column.
        let (width, height) = (bounds.x2 - bounds.x1, bounds.y2 - bounds.y1);
        if ![bounds.x1, bounds.y1, bounds.x2, bounds.y2, width, height]
            .iter()
            .all(|v| v.is_finite())
        {
            return Err(Error::invalid(
                "grid bounds",
                format!(
                    "({}, {})–({}, {}): the space must be finite, and so its width and height",
                    bounds.x1, bounds.y1, bounds.x2, bounds.y2
                ),
            ));
        }
        if !(bounds.x1 < bounds.x2 && bounds.y1 < bounds.y2) {
            return Err(Error::invalid(
                "grid bounds",
                format!(
                    "({}, {})–({}, {}): the space needs a positive width and height",
                    bounds.x1, bounds.y1, bounds.x2, bounds.y2
                ),
            ));
        }
        if columns == 0 || rows == 0 {
            return Err(Error::invalid(
                "grid cells",
                format!("{columns}x{rows}: needs at least one column and one row"),
            ));
        }
        if u64::from(columns) * u64::from(rows) > MAX_CELLS {
            return Err(Error::invalid(
                "grid cells",
                format!("{columns}x{rows} is over {MAX_CELLS} cells"),
            ));
        }
        Ok(Grid {
            bounds,
            columns,
            rows,
            x_scale: f64::from(columns) / (bounds.x2 - bounds.x1),
            y_scale: f64::from(rows) / (bounds.y2 - bounds.y1),
        })
    }

    /// The space.
    pub fn bounds(&self) -> Rect {
        self.bounds
    }

    /// Number of columns (C1).
    pub fn columns(&self) -> u32 {
        self.columns
    }

    /// Number of rows (C2).
    pub fn rows(&self) -> u32 {
        self.rows
    }

    /// Number of cells.
    pub fn cell_count(&self) -> usize {
        self.columns as usize * self.rows as usize
    }

    /// All cells as one rectangle.
    pub fn all(&self) -> CellRect {
        CellRect {
            row0: 0,
            col0: 0,
            row1: self.rows - 1,
            col1: self.columns - 1,
        }
    }

    /// Row-major index of a cell.
    #[inline]
    pub fn index(&self, cell: Cell) -> usize {
        cell.row as usize * self.columns as usize + cell.col as usize
    }

    #[inline]
    fn slot(value: f64, low: f64, scale: f64, slots: u32) -> u32 {
        (((value - low) * scale) as u32).min(slots - 1)
    }

    /// The cell of a point; non-finite coordinates are an error, and points
    /// outside the space are an error or clamped as `policy` says.
    #[inline]
    pub fn cell_of(&self, x: f64, y: f64, policy: OutOfBounds) -> Result<Cell, Error> {
        let b = &self.bounds;
        if !b.contains(x, y) {
            finite("x", x)?;
            finite("y", y)?;
            if policy == OutOfBounds::Reject {
                return Err(Error::invalid(
                    "point",
                    format!(
                        "({x}, {y}) is outside the space ({}, {})–({}, {})",
                        b.x1, b.y1, b.x2, b.y2
                    ),
                ));
            }
        }
        let (x, y) = (x.clamp(b.x1, b.x2), y.clamp(b.y1, b.y2));
        Ok(Cell {
            row: Self::slot(y, b.y1, self.y_scale, self.rows),
            col: Self::slot(x, b.x1, self.x_scale, self.columns),
        })
    }

    /// The cells a closed rectangle overlaps. A rectangle partly outside the
    /// space is clipped to it; one wholly outside is an error, or clamped
    /// onto the border under [`OutOfBounds::Clamp`].
    pub fn cells_of(&self, rect: &Rect, policy: OutOfBounds) -> Result<CellRect, Error> {
        let b = &self.bounds;
        let outside = rect.x2 < b.x1 || rect.x1 > b.x2 || rect.y2 < b.y1 || rect.y1 > b.y2;
        if outside && policy == OutOfBounds::Reject {
            return Err(Error::invalid(
                "rectangle",
                format!(
                    "({}, {})–({}, {}) is outside the space ({}, {})–({}, {})",
                    rect.x1, rect.y1, rect.x2, rect.y2, b.x1, b.y1, b.x2, b.y2
                ),
            ));
        }
        let first = self.cell_of(rect.x1, rect.y1, OutOfBounds::Clamp)?;
        let last = self.cell_of(rect.x2, rect.y2, OutOfBounds::Clamp)?;
        Ok(CellRect::spanning(first, last).expect("a valid rectangle maps to ordered cells"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Grid {
        Grid::new(Rect::new(0.0, 0.0, 10.0, 5.0).unwrap(), 10, 5).unwrap()
    }

    #[test]
    fn points_map_to_cells_with_the_upper_border_in_the_last_cell() {
        let g = grid();
        let at = |x, y| g.cell_of(x, y, OutOfBounds::Reject).unwrap();
        assert_eq!(at(0.0, 0.0), Cell { row: 0, col: 0 });
        assert_eq!(at(0.99, 0.5), Cell { row: 0, col: 0 });
        assert_eq!(at(1.0, 1.0), Cell { row: 1, col: 1 });
        assert_eq!(at(10.0, 5.0), Cell { row: 4, col: 9 });
        assert_eq!(at(9.999, 4.999), Cell { row: 4, col: 9 });
    }

    #[test]
    fn bad_coordinates_are_errors_and_outside_points_follow_the_policy() {
        let g = grid();
        assert!(g
            .cell_of(f64::NAN, 1.0, OutOfBounds::Clamp)
            .unwrap_err()
            .to_string()
            .contains("NaN"));
        assert!(g.cell_of(1.0, f64::INFINITY, OutOfBounds::Clamp).is_err());
        let error = g.cell_of(11.0, 1.0, OutOfBounds::Reject).unwrap_err().to_string();
        assert!(error.contains("outside"), "{error}");
        assert_eq!(
            g.cell_of(11.0, -3.0, OutOfBounds::Clamp).unwrap(),
            Cell { row: 0, col: 9 }
        );
        assert!(Rect::new(2.0, 0.0, 1.0, 1.0)
            .unwrap_err()
            .to_string()
            .contains("inverted"));
        assert!(Rect::new(0.0, f64::NAN, 1.0, 1.0).is_err());
        assert!(Grid::new(Rect::new(0.0, 0.0, 0.0, 1.0).unwrap(), 2, 2).is_err());
        assert!(Grid::new(Rect::new(0.0, 0.0, 1.0, 1.0).unwrap(), 0, 2).is_err());
        for bounds in [
            Rect {
                x1: f64::NEG_INFINITY,
                y1: 0.0,
                x2: f64::INFINITY,
                y2: 1.0,
            },
            Rect {
                x1: 0.0,
                y1: f64::NAN,
                x2: 1.0,
                y2: 1.0,
            },
            Rect::new(-f64::MAX, 0.0, f64::MAX, 1.0).unwrap(),
        ] {
            let error = Grid::new(bounds, 2, 2).unwrap_err().to_string();
            assert!(error.contains("grid bounds") && error.contains("finite"), "{error}");
        }
    }

    #[test]
    fn rectangles_map_to_the_cells_they_overlap() {
        let g = grid();
        let cells = |x1, y1, x2, y2, policy| g.cells_of(&Rect::new(x1, y1, x2, y2).unwrap(), policy);
        assert_eq!(
            cells(1.5, 0.5, 3.0, 2.2, OutOfBounds::Reject).unwrap(),
            CellRect {
                row0: 0,
                col0: 1,
                row1: 2,
                col1: 3
            }
        );
        assert_eq!(
            cells(-5.0, -5.0, 0.5, 20.0, OutOfBounds::Reject).unwrap(),
            CellRect {
                row0: 0,
                col0: 0,
                row1: 4,
                col1: 0
            }
        );
        assert!(cells(20.0, 0.0, 30.0, 1.0, OutOfBounds::Reject).is_err());
        assert_eq!(
            cells(20.0, 0.0, 30.0, 1.0, OutOfBounds::Clamp).unwrap(),
            CellRect {
                row0: 0,
                col0: 9,
                row1: 1,
                col1: 9
            }
        );
    }

    fn cells(row0: u32, col0: u32, row1: u32, col1: u32) -> CellRect {
        CellRect { row0, col0, row1, col1 }
    }

    #[test]
    fn union_is_a_rectangle_only_for_edge_neighbours_with_a_common_side() {
        let a = cells(0, 0, 1, 1);
        let (right, below, offset, gap) = (
            cells(0, 2, 1, 4),
            cells(2, 0, 3, 1),
            cells(1, 2, 2, 3),
            cells(0, 3, 1, 4),
        );
        assert_eq!(a.union_if_rectangle(&right), Some(cells(0, 0, 1, 4)));
        assert_eq!(below.union_if_rectangle(&a), Some(cells(0, 0, 3, 1)));
        assert_eq!(a.union_if_rectangle(&offset), None);
        assert_eq!(a.union_if_rectangle(&gap), None);
    }
}
