//! A small, bounds-checked reader of ELF64 little-endian shared objects: what the dynamic
//! loader itself reads (the ELF header, the program headers, the dynamic segment and the
//! dynamic symbol and string tables it points to, the relocations' symbol indices, the
//! symbols' version indices and the version sections' strings), so that a model `.so` can
//! be diagnosed before `dlopen`, and the names of its undefined symbols rewritten in place
//! (`rename_undefined`; `retarget_import`, which also drops the import's version).
//!
//! Every offset, size and count comes from the file and is checked against it; a file
//! this reader refuses is one the loader would misread or map past its end.

use super::{invalid, Result};

/// `e_machine` of this build's target: a model compiled for another CPU is refused.
#[cfg(target_arch = "x86_64")]
const MACHINE: u16 = 62;
#[cfg(target_arch = "aarch64")]
const MACHINE: u16 = 183;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const MACHINE: u16 = 0;

/// At most this many dynamic entries, symbols, version records: far above any real model,
/// a bound on the work a hostile file can ask for.
const MAX_ITEMS: usize = 1 << 22;

/// One dynamic symbol.
#[derive(Debug, Clone)]
pub struct Symbol {
    pub name: String,
    /// Offset of the name in the dynamic string table.
    name_off: usize,
    /// Undefined (`SHN_UNDEF`): the model imports it.
    pub undefined: bool,
    /// Weak binding (an undefined weak symbol may stay unresolved).
    pub weak: bool,
    /// `st_value` (a virtual address for a defined symbol).
    pub value: u64,
}

#[derive(Debug, Clone, Copy)]
struct Load {
    vaddr: u64,
    offset: u64,
    filesz: u64,
}

/// A parsed shared object (borrowing nothing: offsets into the bytes it was read from).
#[derive(Debug)]
pub struct Elf {
    loads: Vec<Load>,
    /// File offset and size of the dynamic string table (DT_STRTAB, DT_STRSZ).
    strtab: (usize, usize),
    pub symbols: Vec<Symbol>,
    /// DT_NEEDED names.
    pub needed: Vec<String>,
    /// Offsets (in the string table) of every string the loader reads that is not a symbol
    /// name: DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH, version file and version names.
    other_strings: Vec<usize>,
    /// File ranges of the structures read here (headers, dynamic entries, symbols, hash
    /// tables, relocations, version records): a rename must not write into them.
    read: Vec<(usize, usize)>,
    /// File offset of DT_VERSYM (`.gnu.version`: a u16 version index per symbol), if any.
    versym: Option<usize>,
    /// Length of the file.
    pub len: usize,
}

fn u16_at(d: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        d.get(off..off.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        d.get(off..off.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(d: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        d.get(off..off.checked_add(8)?)?.try_into().ok()?,
    ))
}

fn short(what: &str) -> super::Bad {
    super::Bad::invalid(format!("the model .so is truncated or malformed: {what}"))
}

fn usize_of(v: u64, what: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| short(what))
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const DT_NEEDED: u64 = 1;
const DT_PLTRELSZ: u64 = 2;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_RELA: u64 = 7;
const DT_RELASZ: u64 = 8;
const DT_STRSZ: u64 = 10;
const DT_SYMENT: u64 = 11;
const DT_SONAME: u64 = 14;
const DT_RPATH: u64 = 15;
const DT_REL: u64 = 17;
const DT_RELSZ: u64 = 18;
const DT_PLTREL: u64 = 20;
const DT_JMPREL: u64 = 23;
const DT_RUNPATH: u64 = 29;
const DT_GNU_HASH: u64 = 0x6fff_fef5;
const DT_VERSYM: u64 = 0x6fff_fff0;
const DT_VERDEF: u64 = 0x6fff_fffc;
const DT_VERDEFNUM: u64 = 0x6fff_fffd;
const DT_VERNEED: u64 = 0x6fff_fffe;
const DT_VERNEEDNUM: u64 = 0x6fff_ffff;

impl Elf {
    /// Reads `d` as an ELF64 little-endian shared object for this machine.
    pub fn parse(d: &[u8]) -> Result<Elf> {
        if d.len() < 64 || &d[..4] != b"\x7fELF" {
            return invalid("not an ELF file");
        }
        if d[4] != 2 || d[5] != 1 {
            return invalid(format!(
                "not a 64-bit little-endian ELF file (class {}, data {})",
                d[4], d[5]
            ));
        }
        let e_type = u16_at(d, 16).ok_or_else(|| short("header"))?;
        let machine = u16_at(d, 18).ok_or_else(|| short("header"))?;
        if e_type != 3 {
            return invalid(format!("ELF type {e_type} is not a shared object (3)"));
        }
        if machine != MACHINE {
            return invalid(format!(
                "compiled for ELF machine {machine}, this build runs machine {MACHINE}"
            ));
        }
        let phoff = usize_of(u64_at(d, 32).ok_or_else(|| short("header"))?, "e_phoff")?;
        let phentsize = u16_at(d, 54).ok_or_else(|| short("header"))? as usize;
        let phnum = u16_at(d, 56).ok_or_else(|| short("header"))? as usize;
        if phentsize != 56 {
            return invalid(format!("program header size {phentsize}, not 56"));
        }
        let mut loads = Vec::new();
        let mut dynamic = None;
        for i in 0..phnum {
            let p = i
                .checked_mul(56)
                .and_then(|x| x.checked_add(phoff))
                .ok_or_else(|| short("program headers"))?;
            let ty = u32_at(d, p).ok_or_else(|| short("program headers"))?;
            let field = |k: usize| u64_at(d, p + k).ok_or_else(|| short("program headers"));
            let (offset, vaddr, filesz, memsz) = (field(8)?, field(16)?, field(32)?, field(40)?);
            if ty == PT_LOAD || ty == PT_DYNAMIC {
                let end = offset.checked_add(filesz).ok_or_else(|| short("segment"))?;
                if end > d.len() as u64 {
                    return invalid(format!(
                        "the model .so is truncated: segment {i} ends at byte {end}, the file has {}",
                        d.len()
                    ));
                }
                if vaddr.checked_add(memsz).is_none() {
                    return Err(short("segment address"));
                }
            }
            if ty == PT_LOAD {
                if filesz > memsz {
                    return Err(short("segment sizes"));
                }
                loads.push(Load {
                    vaddr,
                    offset,
                    filesz,
                });
            } else if ty == PT_DYNAMIC {
                dynamic = Some((offset as usize, filesz as usize));
            }
        }
        let Some((dyn_off, dyn_size)) = dynamic else {
            return invalid("no dynamic segment (not a shared library)");
        };
        let mut elf = Elf {
            loads,
            strtab: (0, 0),
            symbols: Vec::new(),
            needed: Vec::new(),
            other_strings: Vec::new(),
            read: vec![(0, 64), (phoff, phoff.saturating_add(phnum * 56))],
            versym: None,
            len: d.len(),
        };
        elf.read.push((dyn_off, dyn_off.saturating_add(dyn_size)));
        // The dynamic entries (16 bytes each) up to DT_NULL.
        let mut tags: Vec<(u64, u64)> = Vec::new();
        for k in 0..(dyn_size / 16).min(MAX_ITEMS) {
            let tag = u64_at(d, dyn_off + 16 * k).ok_or_else(|| short("dynamic"))?;
            let val = u64_at(d, dyn_off + 16 * k + 8).ok_or_else(|| short("dynamic"))?;
            if tag == 0 {
                break;
            }
            tags.push((tag, val));
        }
        let one = |t: u64| tags.iter().find(|(k, _)| *k == t).map(|&(_, v)| v);
        let strtab = one(DT_STRTAB).ok_or_else(|| short("no DT_STRTAB"))?;
        let strsz = usize_of(
            one(DT_STRSZ).ok_or_else(|| short("no DT_STRSZ"))?,
            "DT_STRSZ",
        )?;
        let str_off = elf.file_range(strtab, strsz as u64, "the dynamic string table")?;
        elf.strtab = (str_off, strsz);
        let symtab = one(DT_SYMTAB).ok_or_else(|| short("no DT_SYMTAB"))?;
        if one(DT_SYMENT).is_some_and(|e| e != 24) {
            return Err(short("symbol entry size"));
        }
        let nsyms = elf.symbol_count(d, &tags, symtab)?;
        let sym_off = elf.file_range(symtab, (nsyms as u64) * 24, "the dynamic symbol table")?;
        elf.read.push((sym_off, sym_off + nsyms * 24));
        for i in 0..nsyms {
            let s = sym_off + 24 * i;
            let name_off = u32_at(d, s).ok_or_else(|| short("symbol"))? as usize;
            let info = d[s + 4];
            let shndx = u16_at(d, s + 6).ok_or_else(|| short("symbol"))?;
            let value = u64_at(d, s + 8).ok_or_else(|| short("symbol"))?;
            let name = elf.string(d, name_off)?;
            elf.symbols.push(Symbol {
                name,
                name_off,
                undefined: shndx == 0 && i != 0,
                weak: info >> 4 == 2,
                value,
            });
        }
        // Every relocation names a symbol of the table just read.
        for (addr_tag, size_tag, ent) in [(DT_RELA, DT_RELASZ, 24u64), (DT_REL, DT_RELSZ, 16)] {
            if let (Some(a), Some(sz)) = (one(addr_tag), one(size_tag)) {
                elf.check_relocs(d, a, sz, ent, nsyms)?;
            }
        }
        if let (Some(a), Some(sz)) = (one(DT_JMPREL), one(DT_PLTRELSZ)) {
            let ent = if one(DT_PLTREL) == Some(DT_REL) {
                16
            } else {
                24
            };
            elf.check_relocs(d, a, sz, ent, nsyms)?;
        }
        for &(tag, val) in &tags {
            if matches!(tag, DT_NEEDED | DT_SONAME | DT_RPATH | DT_RUNPATH) {
                let off = usize_of(val, "dynamic string")?;
                let s = elf.string(d, off)?;
                if tag == DT_NEEDED {
                    elf.needed.push(s);
                }
                elf.other_strings.push(off);
            }
        }
        if let Some(v) = one(DT_VERSYM) {
            let off = elf.file_range(v, 2 * nsyms as u64, "DT_VERSYM")?;
            elf.read.push((off, off + 2 * nsyms));
            elf.versym = Some(off);
        }
        if let Some(v) = one(DT_VERNEED) {
            let n = one(DT_VERNEEDNUM).unwrap_or(0);
            elf.version_strings(d, v, n, true)?;
        }
        if let Some(v) = one(DT_VERDEF) {
            let n = one(DT_VERDEFNUM).unwrap_or(0);
            elf.version_strings(d, v, n, false)?;
        }
        Ok(elf)
    }

    /// The file offset of `size` bytes at virtual address `vaddr`, all inside one loaded
    /// segment's file-backed part.
    pub fn file_range(&self, vaddr: u64, size: u64, what: &str) -> Result<usize> {
        for l in &self.loads {
            if vaddr >= l.vaddr && vaddr - l.vaddr <= l.filesz {
                let rel = vaddr - l.vaddr;
                if rel.checked_add(size).is_some_and(|e| e <= l.filesz) {
                    return usize_of(l.offset + rel, what);
                }
            }
        }
        invalid(format!(
            "{what} ({size} bytes at address {vaddr:#x}) is not inside the file's loaded segments"
        ))
    }

    /// The NUL-terminated string at `off` in the dynamic string table.
    fn string(&self, d: &[u8], off: usize) -> Result<String> {
        let (base, size) = self.strtab;
        if off >= size {
            return Err(short("string offset past the string table"));
        }
        let bytes = &d[base + off..base + size];
        let end = bytes
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| short("unterminated string"))?;
        Ok(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }

    /// The number of dynamic symbols: DT_HASH's chain count, else the end of DT_GNU_HASH's
    /// last chain.
    fn symbol_count(&mut self, d: &[u8], tags: &[(u64, u64)], _symtab: u64) -> Result<usize> {
        let one = |t: u64| tags.iter().find(|(k, _)| *k == t).map(|&(_, v)| v);
        if let Some(h) = one(DT_HASH) {
            let off = self.file_range(h, 8, "DT_HASH")?;
            let nb = u32_at(d, off).ok_or_else(|| short("DT_HASH"))? as usize;
            let n = u32_at(d, off + 4).ok_or_else(|| short("DT_HASH"))? as usize;
            self.read
                .push((off, off.saturating_add(8 + 4 * nb.saturating_add(n))));
            if n > MAX_ITEMS {
                return Err(short("symbol count"));
            }
            return Ok(n);
        }
        let Some(g) = one(DT_GNU_HASH) else {
            return invalid("no symbol hash table (DT_HASH or DT_GNU_HASH)");
        };
        let off = self.file_range(g, 16, "DT_GNU_HASH")?;
        let nbuckets = u32_at(d, off).ok_or_else(|| short("DT_GNU_HASH"))? as u64;
        let symoffset = u32_at(d, off + 4).ok_or_else(|| short("DT_GNU_HASH"))? as u64;
        let bloom = u32_at(d, off + 8).ok_or_else(|| short("DT_GNU_HASH"))? as u64;
        if nbuckets as usize > MAX_ITEMS || bloom as usize > MAX_ITEMS {
            return Err(short("DT_GNU_HASH sizes"));
        }
        let buckets = g + 16 + 8 * bloom;
        let b_off = self.file_range(buckets, 4 * nbuckets, "DT_GNU_HASH buckets")?;
        self.read.push((off, b_off + 4 * nbuckets as usize));
        let mut last = 0u64;
        for i in 0..nbuckets as usize {
            last = last.max(u32_at(d, b_off + 4 * i).ok_or_else(|| short("bucket"))? as u64);
        }
        if last < symoffset {
            return Ok(symoffset as usize);
        }
        let chains = buckets + 4 * nbuckets;
        let mut i = last;
        loop {
            if (i as usize) > MAX_ITEMS {
                return Err(short("DT_GNU_HASH chain"));
            }
            let c = self.file_range(chains + 4 * (i - symoffset), 4, "DT_GNU_HASH chain")?;
            self.read.push((c, c + 4));
            let h = u32_at(d, c).ok_or_else(|| short("chain"))?;
            if h & 1 == 1 {
                return Ok(i as usize + 1);
            }
            i += 1;
        }
    }

    fn check_relocs(
        &mut self,
        d: &[u8],
        addr: u64,
        size: u64,
        ent: u64,
        nsyms: usize,
    ) -> Result<()> {
        let off = self.file_range(addr, size, "the relocations")?;
        self.read.push((off, off + size as usize));
        for k in 0..(size / ent) as usize {
            let info = u64_at(d, off + k * ent as usize + 8).ok_or_else(|| short("relocation"))?;
            let sym = if ent == 24 {
                info >> 32
            } else {
                (info >> 8) & 0xff_ffff
            };
            if sym as usize >= nsyms.max(1) {
                return invalid(format!(
                    "relocation {k} names symbol {sym}, the table has {nsyms}"
                ));
            }
        }
        Ok(())
    }

    /// The strings of DT_VERNEED (`need`) or DT_VERDEF records.
    fn version_strings(&mut self, d: &[u8], addr: u64, count: u64, need: bool) -> Result<()> {
        let mut at = addr;
        for _ in 0..(count as usize).min(MAX_ITEMS) {
            let r = self.file_range(at, 16, "a version record")?;
            self.read.push((r, r + 16));
            let cnt = u16_at(d, r + if need { 2 } else { 6 }).ok_or_else(|| short("version"))?;
            if need {
                let file = u32_at(d, r + 4).ok_or_else(|| short("version"))? as usize;
                self.string(d, file)?;
                self.other_strings.push(file);
            }
            let aux = u32_at(d, r + if need { 8 } else { 12 }).ok_or_else(|| short("version"))?;
            let mut a = at.checked_add(aux as u64).ok_or_else(|| short("version"))?;
            for _ in 0..cnt {
                let x = self.file_range(a, if need { 16 } else { 8 }, "a version entry")?;
                self.read.push((x, x + if need { 16 } else { 8 }));
                let name =
                    u32_at(d, x + if need { 8 } else { 0 }).ok_or_else(|| short("version"))?;
                self.string(d, name as usize)?;
                self.other_strings.push(name as usize);
                let next =
                    u32_at(d, x + if need { 12 } else { 4 }).ok_or_else(|| short("version"))?;
                if next == 0 {
                    break;
                }
                a = a.checked_add(next as u64).ok_or_else(|| short("version"))?;
            }
            let next = u32_at(d, r + if need { 12 } else { 16 }).ok_or_else(|| short("version"))?;
            if next == 0 {
                break;
            }
            at = at
                .checked_add(next as u64)
                .ok_or_else(|| short("version"))?;
        }
        Ok(())
    }

    /// A defined symbol's value by name.
    pub fn defined(&self, name: &str) -> Option<&Symbol> {
        self.symbols.iter().find(|s| !s.undefined && s.name == name)
    }

    /// The undefined, non-weak symbols (what must resolve for `dlopen(RTLD_NOW)`).
    pub fn imports(&self) -> impl Iterator<Item = &Symbol> {
        self.symbols.iter().filter(|s| s.undefined && !s.weak)
    }

    /// Rewrites, in `d` (the bytes this was parsed from), the name of every undefined
    /// symbol that starts with `from` to start with `to` (same length), in place in the
    /// dynamic string table. Refuses when a rewritten byte is also part of a string the
    /// loader reads for something else (a shared suffix, a library or version name): the
    /// rewrite would change it too. Returns the number of names rewritten.
    pub fn rename_undefined(&self, d: &mut [u8], from: &[u8], to: &[u8]) -> Result<usize> {
        assert_eq!(from.len(), to.len());
        self.rewrite(d, |n| n.starts_with(from), to, false)
    }

    /// Rewrites the name of the undefined symbol `name` to `to` (same length), as
    /// `rename_undefined` does, and makes the import unversioned (its DT_VERSYM entry
    /// `VER_NDX_GLOBAL`), so that it binds to `to` whichever library defines it (a
    /// `malloc@GLIBC_2.2.5` import binds only to glibc's). Returns whether it was imported.
    pub fn retarget_import(&self, d: &mut [u8], name: &str, to: &[u8]) -> Result<bool> {
        assert_eq!(name.len(), to.len());
        Ok(self.rewrite(d, |n| n == name.as_bytes(), to, true)? > 0)
    }

    /// The DT_VERSYM entry of the dynamic symbol `name` in `d` (None without one).
    #[cfg(test)]
    fn version_index(&self, d: &[u8], name: &str) -> Option<u16> {
        let i = self.symbols.iter().position(|s| s.name == name)?;
        u16_at(d, self.versym? + 2 * i)
    }

    /// Rewrites the first `to.len()` bytes of the name of every undefined symbol whose name
    /// `pick` chooses to `to` (and, when `unversion`, its DT_VERSYM entry to 1), after
    /// checking that no other string the loader reads, and no structure it reads, shares
    /// those bytes. Returns the number of symbols rewritten.
    fn rewrite(
        &self,
        d: &mut [u8],
        pick: impl Fn(&[u8]) -> bool,
        to: &[u8],
        unversion: bool,
    ) -> Result<usize> {
        let from_len = to.len();
        if d.len() != self.len {
            return invalid("the bytes differ from the ones parsed");
        }
        let (base, size) = self.strtab;
        let strlen = |off: usize| {
            d[base + off..base + size]
                .iter()
                .position(|&b| b == 0)
                .unwrap_or(size - off)
        };
        // (start, end) of every string the loader reads, and whether it is renamed.
        let mut refs: Vec<(usize, usize, bool)> = Vec::new();
        // The symbol table indices of the renamed ones.
        let mut picked = Vec::new();
        for (i, s) in self.symbols.iter().enumerate() {
            let renamed = s.undefined && pick(s.name.as_bytes());
            if renamed {
                picked.push(i);
            }
            refs.push((s.name_off, s.name_off + strlen(s.name_off) + 1, renamed));
        }
        for &o in &self.other_strings {
            refs.push((o, o + strlen(o) + 1, false));
        }
        let mut targets: Vec<usize> = refs.iter().filter(|r| r.2).map(|r| r.0).collect();
        targets.sort_unstable();
        targets.dedup();
        refs.sort_unstable();
        for &t in &targets {
            let (lo, hi) = (t, t + from_len);
            // Strings starting before hi and ending after lo overlap the rewritten bytes;
            // only renamed names starting exactly at t may.
            let end = refs.partition_point(|r| r.0 < hi);
            for r in &refs[..end] {
                if r.1 > lo && !(r.0 == t && r.2) {
                    let name = String::from_utf8_lossy(&d[base + r.0..base + r.1 - 1]);
                    let this = String::from_utf8_lossy(&d[base + t..base + t + strlen(t)]);
                    return invalid(format!(
                        "cannot rename the import {this}: its name shares bytes with '{name}' in the dynamic string table"
                    ));
                }
            }
        }
        for &t in &targets {
            let (lo, hi) = (base + t, base + t + from_len);
            if let Some(r) = self.read.iter().find(|r| r.0 < hi && lo < r.1) {
                return invalid(format!(
                    "the dynamic string table overlaps the file's other dynamic structures (bytes {}..{})",
                    r.0, r.1
                ));
            }
        }
        for &t in &targets {
            d[base + t..base + t + from_len].copy_from_slice(to);
        }
        if let (true, Some(vs)) = (unversion, self.versym) {
            for i in picked {
                d[vs + 2 * i..vs + 2 * i + 2].copy_from_slice(&1u16.to_le_bytes());
            }
        }
        Ok(targets.len())
    }
}

#[cfg(test)]
mod tests {
    use super::Elf;

    /// The hand-built objects of the fuzz seed corpus (fuzz/make_aoti_seeds.py).
    fn seed(name: &str) -> Vec<u8> {
        let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/corpus/aoti_package/");
        std::fs::read(format!("{p}{name}")).unwrap()
    }

    #[test]
    fn imports_and_rename() {
        let mut d = seed("elf_import");
        let e = Elf::parse(&d).unwrap();
        let imports: Vec<&str> = e.imports().map(|s| s.name.as_str()).collect();
        assert_eq!(imports, ["aoti_torch_cpu_topk"]);
        assert!(e.defined("f").is_some());
        assert_eq!(e.rename_undefined(&mut d, b"aoti_", b"ltai_").unwrap(), 1);
        let again = Elf::parse(&d).unwrap();
        assert_eq!(again.imports().next().unwrap().name, "ltai_torch_cpu_topk");
        assert_eq!(
            Elf::parse(&seed("elf_needed")).unwrap().needed,
            ["libm.so.6"]
        );
    }

    /// A C file compiled by `cc` with `args` into `dir/name.so`, returned.
    fn shared_object(dir: &std::path::Path, name: &str, src: &str, args: &[&str]) -> Vec<u8> {
        let (c, so) = (
            dir.join(format!("{name}.c")),
            dir.join(format!("{name}.so")),
        );
        std::fs::write(&c, src).unwrap();
        let st = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&so)
            .arg(&c)
            .args(args)
            .status()
            .unwrap();
        assert!(st.success(), "cc {name}.c failed");
        std::fs::read(so).unwrap()
    }

    fn dlopen(path: &std::path::Path, flags: i32) -> *mut std::ffi::c_void {
        let p = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: p is NUL-terminated; the objects opened are this test's own.
        unsafe { libc::dlopen(p.as_ptr(), flags) }
    }

    #[test]
    fn a_retargeted_import_binds_to_an_unversioned_name() {
        let dir = std::env::temp_dir().join(format!("ltai-elf-retarget-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // m.so calls malloc@GLIBC_2.2.5; d.so defines ltai_m@@TEST_0 only.
        let mut m = shared_object(
            &dir,
            "m",
            "#include <stdlib.h>\nvoid *f(size_t n) { return malloc(n); }\n",
            &[],
        );
        std::fs::write(dir.join("d.map"), "TEST_0 { global: ltai_m; local: *; };\n").unwrap();
        let map = format!("-Wl,--version-script={}", dir.join("d.map").display());
        shared_object(
            &dir,
            "d",
            "void *ltai_m(unsigned long n) { return (void *)(n + 1); }\n",
            &[&map],
        );
        let e = Elf::parse(&m).unwrap();
        assert!(
            e.version_index(&m, "malloc").unwrap() > 1,
            "malloc is versioned"
        );
        assert!(!e
            .retarget_import(&mut m.clone(), "calloc", b"ltai_c")
            .unwrap());
        // The name only, versioned still: glibc's version is not d.so's.
        let mut named = m.clone();
        e.rename_undefined(&mut named, b"malloc", b"ltai_m")
            .unwrap();
        assert!(e.retarget_import(&mut m, "malloc", b"ltai_m").unwrap());
        let again = Elf::parse(&m).unwrap();
        assert!(again.imports().any(|s| s.name == "ltai_m"));
        assert!(!again.imports().any(|s| s.name == "malloc"));
        assert_eq!(again.version_index(&m, "ltai_m"), Some(1));
        std::fs::write(dir.join("named.so"), &named).unwrap();
        std::fs::write(dir.join("m2.so"), &m).unwrap();
        let d = dlopen(&dir.join("d.so"), libc::RTLD_NOW | libc::RTLD_GLOBAL);
        assert!(!d.is_null());
        assert!(dlopen(&dir.join("named.so"), libc::RTLD_NOW).is_null());
        let h = dlopen(&dir.join("m2.so"), libc::RTLD_NOW);
        assert!(!h.is_null());
        // SAFETY: h is m2.so, whose f is `void *f(size_t)`.
        let got = unsafe {
            let f = libc::dlsym(h, c"f".as_ptr());
            assert!(!f.is_null());
            let f: extern "C" fn(usize) -> usize = std::mem::transmute(f);
            f(41)
        };
        assert_eq!(got, 42, "f's malloc call went to d.so's ltai_m");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn refusals() {
        // "mm" is the tail of "aoti_torch_cpu_mm": renaming is fine (the tail is not in the
        // rewritten bytes); a string starting inside the prefix would not be.
        let mut d = seed("elf_shared_tail");
        let e = Elf::parse(&d).unwrap();
        assert_eq!(e.rename_undefined(&mut d, b"aoti_", b"ltai_").unwrap(), 1);
        let mut d = seed("elf_shared_tail");
        let e = Elf::parse(&d).unwrap();
        let err = e.rename_undefined(&mut d, b"aoti_torch_cpu_m", b"xxxxxxxxxxxxxxxx");
        assert!(err.unwrap_err().msg.contains("shares bytes with 'mm'"));
        // A defined aoti_* symbol is not renamed.
        let mut d = seed("elf_defined_aoti");
        let e = Elf::parse(&d).unwrap();
        assert_eq!(e.rename_undefined(&mut d, b"aoti_", b"ltai_").unwrap(), 0);
        assert!(Elf::parse(&seed("elf_truncated"))
            .unwrap_err()
            .msg
            .contains("truncated"));
        assert!(Elf::parse(b"\x7fELF").is_err() && Elf::parse(&[]).is_err());
    }
}
