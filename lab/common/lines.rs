//! Reading a key-per-line input file with line numbers, and the policy for
//! bad lines.

use std::path::Path;

use crate::common::Error;

/// What to do with a malformed input line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// Stop with an error naming the file and line.
    #[default]
    Fail,
    /// Skip the line and count it in the report.
    Skip,
}

/// The keys of a file, one per line, in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyLines {
    /// The non-empty keys (surrounding white space removed).
    pub keys: Vec<String>,
    /// Lines that were empty or only white space: skipped, counted.
    pub empty_lines: usize,
    /// Malformed lines skipped under [`OnError::Skip`].
    pub skipped_lines: usize,
}

/// Reads `path` as one key per line. A line that is not UTF-8 is an error
/// naming the line, or is skipped and counted under [`OnError::Skip`].
pub fn read_key_lines(path: &Path, on_error: OnError) -> Result<KeyLines, Error> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    parse_key_lines(&bytes, path, on_error)
}

/// As [`read_key_lines`], from bytes already in memory (`path` names them in errors).
pub fn parse_key_lines(bytes: &[u8], path: &Path, on_error: OnError) -> Result<KeyLines, Error> {
    let mut result = KeyLines::default();
    let (_, skipped) = for_each_line(bytes, path, on_error, |_, line| {
        let text = std::str::from_utf8(line)
            .map_err(|error| format!("not UTF-8 (invalid byte at column {})", error.valid_up_to() + 1))?;
        let key = text.trim();
        if key.is_empty() {
            result.empty_lines += 1;
        } else {
            result.keys.push(key.to_owned());
        }
        Ok(())
    })?;
    result.skipped_lines = skipped;
    Ok(result)
}

/// Calls `parse` with each line of `bytes` and its 0-based index (a final
/// newline ends the last line rather than starting an empty one). A line
/// `parse` rejects is an error naming `path`, the line and the reason under
/// [`OnError::Fail`], or is skipped and counted under [`OnError::Skip`].
/// Returns the number of lines and of skipped lines.
pub fn for_each_line(
    bytes: &[u8],
    path: &Path,
    on_error: OnError,
    mut parse: impl FnMut(usize, &[u8]) -> Result<(), String>,
) -> Result<(usize, usize), Error> {
    if bytes.is_empty() {
        return Ok((0, 0));
    }
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let (mut lines, mut skipped) = (0, 0);
    for (index, line) in body.split(|&byte| byte == b'\n').enumerate() {
        lines += 1;
        if let Err(reason) = parse(index, line) {
            match on_error {
                OnError::Skip => skipped += 1,
                OnError::Fail => {
                    return Err(Error::Line {
                        path: path.to_owned(),
                        line: index + 1,
                        reason,
                    })
                }
            }
        }
    }
    Ok((lines, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_empty_lines_and_names_bad_ones() {
        let path = Path::new("words.txt");
        let text = b"apple\n\n  \npear\r\n\xff\xfe\nfig\n";
        let error = parse_key_lines(text, path, OnError::Fail).unwrap_err();
        assert_eq!(error.to_string(), "words.txt:5: not UTF-8 (invalid byte at column 1)");
        let lines = parse_key_lines(text, path, OnError::Skip).unwrap();
        assert_eq!(lines.keys, vec!["apple", "pear", "fig"]);
        assert_eq!(lines.empty_lines, 2);
        assert_eq!(lines.skipped_lines, 1);
    }

    #[test]
    fn empty_file_and_missing_newline() {
        let path = Path::new("x");
        assert_eq!(parse_key_lines(b"", path, OnError::Fail).unwrap(), KeyLines::default());
        assert_eq!(
            parse_key_lines(b"a\nb", path, OnError::Fail).unwrap().keys,
            vec!["a", "b"]
        );
    }

    #[test]
    fn missing_file_is_an_error_naming_it() {
        let error = read_key_lines(Path::new("/nonexistent/keys.txt"), OnError::Fail).unwrap_err();
        assert!(error.to_string().starts_with("/nonexistent/keys.txt: "), "{error}");
    }
}
