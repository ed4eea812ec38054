//! Ids the daemon passes around inside, each a type of its own so that one cannot stand in for
//! another (a card's id where a session's was meant). The wire and the ledger keep their
//! strings: an id is made from the string a client or a record gives and read back as one.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        /// Cheap to clone: the text is shared.
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            pub fn new(id: &str) -> Self {
                Self(Arc::from(id))
            }

            /// The id as the wire and the ledger write it.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self::new(id)
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(Arc::from(id))
            }
        }

        /// A map keyed by the id is looked up with the wire's string.
        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&*self.0, f)
            }
        }
    };
}

id!(
    /// A session's id (`SessionRecord::id`).
    SessionId
);

id!(
    /// A permission card's id (`CardRecord::id`), minted from the ledger's counter.
    CardId
);

impl CardId {
    /// The id of the ledger's `number`th id: `c` and six digits at least.
    pub fn mint(number: u64) -> Self {
        Self::from(format!("c{number:06}"))
    }
}

id!(
    /// A tool call's id in its turn, as the model gave it (`ToolCall::id`).
    CallId
);

id!(
    /// A grant's id (`GrantRecord::id`), as the ledger minted it.
    GrantId
);
