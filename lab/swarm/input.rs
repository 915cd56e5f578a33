//! The spatial input: CSV lines of points, queries and removals, read with
//! line numbers and validated before the dataflow starts.

use std::collections::HashSet;
use std::path::Path;

use crate::common::lines::{for_each_line, OnError};
use crate::common::Error;

use equipoise::swarm::{Grid, OutOfBounds, Rect};
use equipoise::swarm::{Item, Record};
use equipoise::swarm::{Point, Query};

/// Validated input: each record with the index of its line (every line
/// counts, so that the epoch of a record is `line / batch`).
#[derive(Debug, Clone, PartialEq)]
pub struct SpatialInput<P = (), Q = ()> {
    /// Records in line order.
    pub records: Vec<(u64, Record<P, Q>)>,
    /// Lines in all (comments and blanks included).
    pub lines: u64,
    /// Malformed lines skipped under [`OnError::Skip`].
    pub skipped_lines: usize,
}

impl<P, Q> Default for SpatialInput<P, Q> {
    fn default() -> Self {
        SpatialInput {
            records: Vec::new(),
            lines: 0,
            skipped_lines: 0,
        }
    }
}

impl<P, Q> SpatialInput<P, Q> {
    /// Counts of (points, queries, removals).
    pub fn counts(&self) -> (u64, u64, u64) {
        self.records
            .iter()
            .fold((0, 0, 0), |(p, q, r), (_, record)| match record.item() {
                Item::Point(_) => (p + 1, q, r),
                Item::Query(_) => (p, q + 1, r),
                Item::Removal(_) => (p, q, r + 1),
            })
    }
}

/// Reads and validates `path` against `grid`.
pub fn read_spatial(path: &Path, grid: &Grid, on_error: OnError) -> Result<SpatialInput, Error> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    parse_spatial(&bytes, path, grid, on_error)
}

/// Validates the lines of `bytes` (`path` names them in errors).
pub fn parse_spatial(bytes: &[u8], path: &Path, grid: &Grid, on_error: OnError) -> Result<SpatialInput, Error> {
    let mut records = Vec::new();
    let mut ids = Ids::default();
    let (lines, skipped_lines) = for_each_line(bytes, path, on_error, |index, line| {
        if let Some(record) = parse_line(line, grid, &mut ids)? {
            records.push((index as u64, record));
        }
        Ok(())
    })?;
    Ok(SpatialInput {
        records,
        lines: lines as u64,
        skipped_lines,
    })
}

/// Ids seen so far: the active queries, every query id ever registered
/// (ids are never reused in a file, so a removal is unambiguous) and every
/// point id.
#[derive(Default)]
struct Ids {
    active: HashSet<u64>,
    used: HashSet<u64>,
    /// Every point id seen: a point given twice would match its queries
    /// twice.
    points: HashSet<u64>,
}

fn parse_line(line: &[u8], grid: &Grid, ids: &mut Ids) -> Result<Option<Record>, String> {
    let text = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_string())?.trim();
    if text.is_empty() || text.starts_with('#') {
        return Ok(None);
    }
    let fields: Vec<&str> = text.split(',').map(str::trim).collect();
    let id = |field: &str| {
        field
            .parse::<u64>()
            .map_err(|_| format!("id `{field}` is not a non-negative integer"))
    };
    let number = |field: &str| -> Result<f64, String> {
        let value = field.parse::<f64>().map_err(|_| format!("`{field}` is not a number"))?;
        if value.is_finite() {
            Ok(value)
        } else {
            Err(format!("coordinate {value} is not finite"))
        }
    };
    let arity = |expected: usize, form: &str| {
        if fields.len() == expected {
            Ok(())
        } else {
            Err(format!("expected {form}, found {} fields", fields.len()))
        }
    };
    match fields[0] {
        "p" => {
            arity(4, "p,<id>,<x>,<y>")?;
            let point_id = id(fields[1])?;
            if !ids.points.insert(point_id) {
                return Err(format!("point id {point_id} was already used"));
            }
            let point = Point::new(point_id, number(fields[2])?, number(fields[3])?);
            Record::point(grid, OutOfBounds::Reject, point)
                .map(Some)
                .map_err(|e| e.to_string())
        }
        "q" => {
            arity(6, "q,<id>,<x1>,<y1>,<x2>,<y2>")?;
            let query_id = id(fields[1])?;
            let rect = Rect::new(
                number(fields[2])?,
                number(fields[3])?,
                number(fields[4])?,
                number(fields[5])?,
            )
            .map_err(|e| e.to_string())?;
            let record =
                Record::query(grid, OutOfBounds::Reject, Query::new(query_id, rect)).map_err(|e| e.to_string())?;
            if !ids.used.insert(query_id) {
                return Err(format!("query id {query_id} was already registered"));
            }
            ids.active.insert(query_id);
            Ok(Some(record))
        }
        "r" => {
            arity(2, "r,<id>")?;
            let query_id = id(fields[1])?;
            if !ids.active.remove(&query_id) {
                return Err(format!("removal of unknown query {query_id}"));
            }
            Ok(Some(Record::removal(query_id)))
        }
        other => Err(format!("unknown record kind `{other}` (expected p, q or r)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Grid {
        Grid::new(Rect::new(0.0, 0.0, 10.0, 10.0).unwrap(), 4, 4).unwrap()
    }

    #[test]
    fn parses_records_with_their_line_index() {
        let text = b"# header\np,1,1.5,2\n\nq,7,0,0,5,5\nr,7\np,2,10,10\n";
        let input = parse_spatial(text, Path::new("in.csv"), &grid(), OnError::Fail).unwrap();
        assert_eq!(input.lines, 6);
        assert_eq!(
            input.records.iter().map(|(line, _)| *line).collect::<Vec<_>>(),
            vec![1, 3, 4, 5]
        );
        assert_eq!(input.counts(), (2, 1, 1));
        assert!(matches!(input.records[2].1.item(), Item::Removal(7)));
    }

    #[test]
    fn bad_lines_are_named_or_skipped_and_counted() {
        let cases: [(&[u8], &str); 9] = [
            (b"p,1,2", "expected p,<id>,<x>,<y>"),
            (b"p,x,1,1", "id `x`"),
            (b"p,1,NaN,1", "not finite"),
            (b"p,1,11,1", "outside the space"),
            (b"q,1,5,5,1,1", "inverted"),
            (b"q,1,20,20,30,30", "outside the space"),
            (b"r,4", "removal of unknown query 4"),
            (b"z,1", "unknown record kind `z`"),
            (b"p,0,2,2", "point id 0 was already used"),
        ];
        for (line, expected) in cases {
            let text = [b"p,0,1,1\n".as_slice(), line, b"\n"].concat();
            let error = parse_spatial(&text, Path::new("in.csv"), &grid(), OnError::Fail)
                .unwrap_err()
                .to_string();
            assert!(error.starts_with("in.csv:2: ") && error.contains(expected), "{error}");
            let input = parse_spatial(&text, Path::new("in.csv"), &grid(), OnError::Skip).unwrap();
            assert_eq!((input.records.len(), input.skipped_lines), (1, 1));
        }
        let twice = parse_spatial(
            b"q,1,0,0,1,1\nq,1,0,0,1,1\n",
            Path::new("in.csv"),
            &grid(),
            OnError::Fail,
        );
        assert!(twice.unwrap_err().to_string().contains("already registered"));
    }
}
