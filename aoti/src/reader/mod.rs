//! The readers of what a package holds, pure functions over bytes and text (no libtensor,
//! no FFI), so that the fuzz target (fuzz/fuzz_targets/aoti_package.rs) can include them
//! as they are: the zip and its entries (`package`), the metadata and extern-kernel JSON
//! (`json`), the model `.so`'s dynamic symbols (`elf`), oneDNN's memory descriptors of packed
//! weights (`onednn`), and what the wrapper source says
//! about inputs and constants (`wrapper`).

pub mod elf;
pub mod json;
pub mod onednn;
pub mod package;
pub mod wrapper;

/// Why a package was refused: unreadable (`io`: a truncated or unreadable archive) or
/// malformed / unsupported contents; the message names the entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad {
    pub io: bool,
    pub msg: String,
}

impl Bad {
    pub fn invalid(msg: impl Into<String>) -> Bad {
        Bad {
            io: false,
            msg: msg.into(),
        }
    }

    pub fn io(msg: impl Into<String>) -> Bad {
        Bad {
            io: true,
            msg: msg.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Bad>;

pub fn invalid<T>(msg: impl Into<String>) -> Result<T> {
    Err(Bad::invalid(msg))
}
