//! Synthetic BTF blobs, encoded like the kernel's
//! (Documentation/bpf/btf.rst): a header, the type records, the string table.

/// Builds BTF bytes from type records and a string table. Type ids count
/// from 1 in the order the records are added.
pub struct BtfBuilder {
    types: Vec<u8>,
    strings: Vec<u8>,
}

impl Default for BtfBuilder {
    fn default() -> Self {
        BtfBuilder::new()
    }
}

impl BtfBuilder {
    /// No types; the string table holds only the empty name.
    pub fn new() -> Self {
        BtfBuilder {
            types: Vec::new(),
            strings: vec![0],
        }
    }

    /// Adds `name` to the string table; returns its offset.
    pub fn string(&mut self, name: &str) -> u32 {
        let off = self.strings.len() as u32;
        self.strings.extend_from_slice(name.as_bytes());
        self.strings.push(0);
        off
    }

    /// Appends raw type-record words (for kinds without a helper).
    pub fn words(&mut self, w: &[u32]) {
        for x in w {
            self.types.extend_from_slice(&x.to_le_bytes());
        }
    }

    /// An unsigned integer type `name` of `size` bytes.
    pub fn int(&mut self, name: &str, size: u32) {
        let n = self.string(name);
        self.words(&[n, 1 << 24, size, size * 8]);
    }

    /// A struct (`kind` 4) or union (5) with `members` (name, type id,
    /// offset in bits, or with `kind_flag` bitfield size << 24 | offset).
    pub fn composite(
        &mut self,
        kind: u32,
        name: &str,
        size: u32,
        kind_flag: bool,
        members: &[(&str, u32, u32)],
    ) {
        let n = self.string(name);
        let info = (kind << 24) | (members.len() as u32) | (u32::from(kind_flag) << 31);
        self.words(&[n, info, size]);
        for (mname, ty, off) in members {
            let mn = self.string(mname);
            self.words(&[mn, *ty, *off]);
        }
    }

    /// A plain struct: [`BtfBuilder::composite`] of kind 4 without bitfields.
    pub fn strukt(&mut self, name: &str, size: u32, members: &[(&str, u32, u32)]) {
        self.composite(4, name, size, false, members);
    }

    /// The blob: header (magic 0xeb9f, version 1), types, strings.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&0xeb9f_u16.to_le_bytes());
        out.push(1);
        out.push(0);
        for w in [
            24u32,
            0,
            self.types.len() as u32,
            self.types.len() as u32,
            self.strings.len() as u32,
        ] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&self.types);
        out.extend_from_slice(&self.strings);
        out
    }
}
