//! Bounded histories: what an operator keeps of its past decisions, on a
//! stream that never ends.

/// Appends `row` to `rows`, keeping at least the latest `kept` rows and at
/// most twice as many: once `rows` holds `2 × kept`, the oldest `kept` go
/// at once (amortised: one move per row appended).
pub(crate) fn keep_recent<R>(rows: &mut Vec<R>, row: R, kept: usize) {
    let kept = kept.max(1);
    // Saturating: `usize::MAX` keeps everything, as asked.
    if rows.len() >= kept.saturating_mul(2) {
        rows.drain(..rows.len() - kept + 1);
    }
    rows.push(row);
}

#[cfg(test)]
mod tests {
    use super::keep_recent;

    #[test]
    fn the_latest_rows_are_kept_and_no_more_than_twice_as_many() {
        let mut rows = Vec::new();
        for row in 0..10_000u32 {
            keep_recent(&mut rows, row, 100);
            assert!(rows.len() <= 200, "{}", rows.len());
            let latest = (row + 1).min(100) as usize;
            assert!(rows.len() >= latest);
            // In order, ending with the newest.
            assert_eq!(
                rows[rows.len() - latest..],
                (row + 1 - latest as u32..=row).collect::<Vec<_>>()[..]
            );
        }
        let mut one = Vec::new();
        for row in 0..5 {
            keep_recent(&mut one, row, 0);
        }
        assert_eq!(one.last(), Some(&4));
        assert!(one.len() <= 2);
        let mut all = Vec::new();
        for row in 0..1_000 {
            keep_recent(&mut all, row, usize::MAX);
        }
        assert_eq!(all, (0..1_000).collect::<Vec<_>>(), "usize::MAX keeps every row");
    }
}
