//! `codaris-agent`: the turn loop, the per-round tool surface, slash parsing, the loop guard, tool
//! implementations and model providers.
//!
//! Non-goals: it knows neither sled nor tonic; it reaches storage through a trait the daemon
//! implements. The loop itself arrives with the agent-loop work; today the crate is only this header.
