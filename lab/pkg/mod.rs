//! PKG's experiments: the word count job and the replay simulator that
//! reproduces the papers' results.

pub mod sim;
pub mod wordcount;
