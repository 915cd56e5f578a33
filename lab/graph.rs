//! Seeded synthetic graphs: Chung–Lu power-law graphs and R-MAT.
//!
//! Edge draw `i` of a graph is a pure function of (seed, i), and the graph
//! is its first distinct edges in draw order ([`Graph::distinct_edges`]):
//! it does not depend on the number of workers or processes.
//!
//! - **Chung–Lu**: each endpoint drawn Zipf(`exponent`) over the nodes, by
//!   rank, then the ranks permuted to node ids (so that a hub's id says
//!   nothing of its rank). Exponent 1.0 gives degrees with a power-law
//!   exponent of about 2, as in follower graphs; 0 gives uniform random
//!   graphs.
//! - **R-MAT** (Chakrabarti et al., SDM 2004) with Graph500's quadrant
//!   probabilities (0.57, 0.19, 0.19, 0.05): skewed, but with no node
//!   carrying a large share of the edges, the control.

use std::fmt;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use rand_distr::{Distribution, Zipf};

use crate::common::Error;
use equipoise::common::hash::splitmix64;

/// A node id.
pub type Node = u32;

/// Which generator draws the edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GraphKind {
    /// Endpoints drawn Zipf(exponent) over the nodes, ids permuted.
    ChungLu,
    /// Recursive quadrants with Graph500's probabilities.
    Rmat,
}

impl fmt::Display for GraphKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GraphKind::ChungLu => "chung-lu",
            GraphKind::Rmat => "rmat",
        })
    }
}

/// R-MAT's probabilities of the first three quadrants (the fourth takes
/// the rest), Graph500's.
const RMAT: [f64; 3] = [0.57, 0.19, 0.19];

/// Draws the edges of one graph.
#[derive(Debug, Clone)]
pub struct Graph {
    nodes: Node,
    seed: u64,
    /// Chung–Lu's endpoint law, by rank from 1 (rejection-inversion: a
    /// few operations a draw, where a table's search would miss the cache).
    endpoints: Option<Zipf<f64>>,
    /// A multiplier coprime with `nodes`: rank r is node (r × it) mod nodes.
    spread: u64,
}

impl Graph {
    /// The graph of `nodes` nodes drawn by `kind` (Chung–Lu's endpoints
    /// Zipf(`exponent`)) from `seed`.
    pub fn new(kind: GraphKind, nodes: Node, exponent: f64, seed: u64) -> Result<Self, Error> {
        if nodes == 0 {
            return Err(Error::invalid("--nodes", "0: must be at least 1"));
        }
        if !(exponent.is_finite() && exponent >= 0.0) {
            return Err(Error::invalid(
                "--exponent",
                format!("{exponent}: must be a number, at least 0"),
            ));
        }
        let endpoints = match kind {
            GraphKind::ChungLu => Some(
                Zipf::new(f64::from(nodes), exponent)
                    .map_err(|error| Error::invalid("--exponent", format!("{exponent}: {error}")))?,
            ),
            GraphKind::Rmat => None,
        };
        let mut spread = 0x9e37_79b1u64;
        while gcd(spread, u64::from(nodes)) != 1 {
            spread += 2;
        }
        Ok(Graph {
            nodes,
            seed,
            endpoints,
            spread,
        })
    }

    /// The node of id `rank` before the ids are permuted.
    fn node(&self, rank: u64) -> Node {
        ((rank % u64::from(self.nodes)) * self.spread % u64::from(self.nodes)) as Node
    }

    /// Edge `index`: (source, destination).
    pub fn edge(&self, index: u64) -> (Node, Node) {
        match &self.endpoints {
            Some(law) => {
                let mut rng = self.rng(index);
                let mut rank = || law.sample(&mut rng) as u64 - 1;
                let src = rank();
                (self.node(src), self.node(rank()))
            }
            None => self.rmat(index),
        }
    }

    /// The draws of edge `index`.
    fn rng(&self, index: u64) -> SmallRng {
        SmallRng::seed_from_u64(splitmix64(self.seed ^ splitmix64(index)))
    }

    /// R-MAT's edge `index`: a quadrant per bit of the ids.
    fn rmat(&self, index: u64) -> (Node, Node) {
        let mut rng = self.rng(index);
        let bits = u64::from(self.nodes).next_power_of_two().trailing_zeros();
        let (mut src, mut dst) = (0u64, 0u64);
        for _ in 0..bits {
            let draw: f64 = rng.random();
            let (down, right) = if draw < RMAT[0] {
                (0, 0)
            } else if draw < RMAT[0] + RMAT[1] {
                (0, 1)
            } else if draw < RMAT[0] + RMAT[1] + RMAT[2] {
                (1, 0)
            } else {
                (1, 1)
            };
            src = 2 * src + down;
            dst = 2 * dst + right;
        }
        (self.node(src), self.node(dst))
    }
}

impl Graph {
    /// The first `count` distinct edges in draw order: a simple graph, as
    /// follower graphs are (Chung–Lu and R-MAT draw an edge again now and
    /// then, a hub's to a popular node often: those draws are skipped).
    /// An error if `count` distinct edges are not found in 16 × `count`
    /// draws (the graph has too few nodes for them).
    pub fn distinct_edges(&self, count: u64) -> Result<Vec<(Node, Node)>, Error> {
        let most = count.saturating_mul(16).max(1024);
        // The distinct edges so far, in draw order and sorted (a hash set of
        // this many edges misses the cache on every insertion).
        let (mut kept, mut sorted): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
        let mut drawn = 0u64;
        while (kept.len() as u64) < count && drawn < most {
            // Half again as many as are missing, as some will repeat.
            let missing = count - kept.len() as u64;
            let more = (missing + missing / 2 + 1024).min(most - drawn);
            let mut batch: Vec<(u64, u64)> = (drawn..drawn + more).map(|index| (self.packed(index), index)).collect();
            drawn += more;
            // Each edge's first draw in the batch, if no earlier batch drew it.
            batch.sort_unstable();
            batch.dedup_by_key(|(edge, _)| *edge);
            batch.retain(|(edge, _)| sorted.binary_search(edge).is_err());
            let mut new: Vec<u64> = batch.iter().map(|&(edge, _)| edge).collect();
            batch.sort_unstable_by_key(|&(_, index)| index);
            kept.extend(batch.iter().map(|&(edge, _)| edge));
            new.append(&mut sorted);
            new.sort_unstable();
            sorted = new;
        }
        if (kept.len() as u64) < count {
            return Err(Error::invalid(
                "--edges",
                format!(
                    "{count}: only {} distinct edges in {drawn} draws over {} nodes; give more --nodes or fewer edges",
                    kept.len(),
                    self.nodes
                ),
            ));
        }
        kept.truncate(count as usize);
        Ok(kept
            .into_iter()
            .map(|edge| ((edge >> 32) as Node, edge as Node))
            .collect())
    }

    /// Edge `index` as one number: the source's bits, then the destination's.
    fn packed(&self, index: u64) -> u64 {
        let (src, dst) = self.edge(index);
        (u64::from(src) << 32) | u64::from(dst)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn out_degrees(graph: &Graph, edges: u64) -> Vec<u64> {
        let mut degrees: HashMap<Node, u64> = HashMap::new();
        for index in 0..edges {
            *degrees.entry(graph.edge(index).0).or_default() += 1;
        }
        let mut degrees: Vec<u64> = degrees.into_values().collect();
        degrees.sort_unstable_by(|a, b| b.cmp(a));
        degrees
    }

    #[test]
    fn chung_lu_hubs_carry_their_zipf_share() {
        let (nodes, edges) = (1u32 << 12, 1u64 << 16);
        let graph = Graph::new(GraphKind::ChungLu, nodes, 1.0, 7).unwrap();
        let degrees = out_degrees(&graph, edges);
        // Rank 1 of Zipf(1.0) over n keys has 1/H(n) of the draws.
        let harmonic: f64 = (1..=nodes).map(|rank| 1.0 / f64::from(rank)).sum();
        let top = degrees[0] as f64 / edges as f64;
        assert!((top - 1.0 / harmonic).abs() < 0.01, "{top} against {}", 1.0 / harmonic);
        // Every id in range, the same graph again from the same seed.
        assert!((0..1000).all(|index| graph.edge(index).0 < nodes && graph.edge(index).1 < nodes));
        let again = Graph::new(GraphKind::ChungLu, nodes, 1.0, 7).unwrap();
        assert!((0..1000).all(|index| graph.edge(index) == again.edge(index)));
    }

    #[test]
    fn rmat_has_no_node_with_a_large_share() {
        let (nodes, edges) = (1u32 << 12, 1u64 << 16);
        let graph = Graph::new(GraphKind::Rmat, nodes, 0.0, 7).unwrap();
        let degrees = out_degrees(&graph, edges);
        let top = degrees[0] as f64 / edges as f64;
        let chung_lu = 1.0 / (1..=nodes).map(|rank| 1.0 / f64::from(rank)).sum::<f64>();
        // Node 0 takes 0.76^12 (3.7 %) here, a third of Chung–Lu's hub.
        assert!(top < chung_lu / 2.0, "{top} against {chung_lu}");
        // Skewed all the same: the top node has many times the mean.
        assert!(top * f64::from(nodes) > 10.0, "{top}");
    }

    #[test]
    fn ranks_map_to_distinct_nodes() {
        for nodes in [1u32, 7, 1000, 1 << 10] {
            let graph = Graph::new(GraphKind::ChungLu, nodes, 1.0, 1).unwrap();
            let mut seen: Vec<Node> = (0..u64::from(nodes)).map(|rank| graph.node(rank)).collect();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), nodes as usize);
        }
    }

    #[test]
    fn distinct_edges_are_distinct_and_in_draw_order() {
        let graph = Graph::new(GraphKind::ChungLu, 1 << 10, 1.0, 3).unwrap();
        let edges = graph.distinct_edges(5_000).unwrap();
        let mut sorted = edges.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 5_000);
        assert_eq!(edges[0], graph.edge(0));
        // The first distinct draws, as a scan with a set finds them.
        let mut seen = std::collections::HashSet::new();
        let reference: Vec<(Node, Node)> = (0..)
            .map(|index| graph.edge(index))
            .filter(|&edge| seen.insert(edge))
            .take(5_000)
            .collect();
        assert_eq!(edges, reference);
        // A prefix of a longer list: the same graph grows by new edges.
        assert_eq!(graph.distinct_edges(6_000).unwrap()[..5_000], edges[..]);
        let error = Graph::new(GraphKind::Rmat, 4, 0.0, 3)
            .unwrap()
            .distinct_edges(100)
            .unwrap_err();
        assert!(error.to_string().contains("--edges"), "{error}");
    }

    #[test]
    fn bad_settings_are_named() {
        let error = Graph::new(GraphKind::ChungLu, 0, 1.0, 1).unwrap_err().to_string();
        assert!(error.contains("--nodes"), "{error}");
        let error = Graph::new(GraphKind::ChungLu, 10, f64::NAN, 1).unwrap_err().to_string();
        assert!(error.contains("--exponent"), "{error}");
    }
}
