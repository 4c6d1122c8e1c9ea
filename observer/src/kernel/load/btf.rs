//! A small reader for the kernel's BTF (`/sys/kernel/btf/vmlinux`): just
//! enough to find a struct member's offset by name.
//!
//! Why our own: aya 0.14's `Btf` can find a type id by name but keeps its
//! type walking private; `btf-rs` is LGPL and `libbpf-rs` builds C libbpf.
//! The part of the format needed here (header, type records, string
//! section; Documentation/bpf/btf.rst in the kernel tree) is small, and the
//! parser must never panic on malformed input, which is easy to fuzz when it
//! is ours.

use std::collections::HashMap;

/// Errors from parsing BTF or resolving a member in it.
#[derive(Debug, thiserror::Error)]
pub enum BtfError {
    /// The BTF file could not be read.
    #[error("cannot read BTF from {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The data is not BTF or is cut short.
    #[error("malformed BTF: {0}")]
    Malformed(String),
    /// No struct of that name.
    #[error("kernel BTF has no struct {0}")]
    NoSuchStruct(String),
    /// The struct has no member of that name.
    #[error("kernel BTF: struct {ty} has no member {member}")]
    NoSuchMember {
        /// The struct searched.
        ty: String,
        /// The member not found.
        member: String,
    },
}

const MAGIC: u16 = 0xeb9f;
const HEADER_MIN: usize = 24;
/// Longest chain of typedefs/modifiers or nested anonymous members followed.
const MAX_DEPTH: usize = 32;

/// One BTF type record, reduced to what member lookup needs.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Type {
    /// `BTF_KIND_INT`: size in bytes, bit offset and width of the value.
    Int { size: u32, offset: u32, bits: u32 },
    /// `BTF_KIND_PTR`.
    Ptr,
    /// `BTF_KIND_ARRAY`: element type and count.
    Array { elem: u32, len: u32 },
    /// `BTF_KIND_STRUCT` or `BTF_KIND_UNION`.
    Composite {
        name: u32,
        size: u32,
        members: Vec<RawMember>,
        kind_flag: bool,
    },
    /// `BTF_KIND_ENUM`/`ENUM64`: size in bytes.
    Enum { size: u32 },
    /// `BTF_KIND_TYPEDEF`, `VOLATILE`, `CONST`, `RESTRICT`, `TYPE_TAG`.
    Alias { target: u32 },
    /// `BTF_KIND_FUNC`: a kernel function, by name (the helpers' own
    /// functions among them, which is how preflight tells a kernel's age).
    Func { name: u32 },
    /// Anything else (functions, variables, data sections, floats...).
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RawMember {
    name: u32,
    ty: u32,
    offset: u32,
}

/// Where a member sits: bit offset from the start of the outer struct, and
/// width in bits (the type's size for plain members).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Bit offset from the start of the struct the path began at.
    pub bit_offset: u32,
    /// Width in bits.
    pub bits: u32,
    /// Whether the member is a bitfield (not byte-aligned or not a whole type).
    pub bitfield: bool,
}

impl Field {
    /// Byte offset, for members that are not bitfields.
    pub fn byte_offset(&self) -> u32 {
        self.bit_offset / 8
    }
}

/// Parsed BTF: type records and the string section.
pub struct Btf {
    /// Index 0 is `void`; ids are indices.
    types: Vec<Type>,
    strings: Vec<u8>,
    structs: HashMap<String, u32>,
}

fn u32_at(data: &[u8], at: usize) -> Result<u32, BtfError> {
    data.get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| BtfError::Malformed(format!("truncated at byte {at}")))
}

impl Btf {
    /// Reads and parses the BTF at `path` (normally `/sys/kernel/btf/vmlinux`).
    ///
    /// # Errors
    /// [`BtfError::Io`] if unreadable, [`BtfError::Malformed`] if not BTF.
    pub fn from_file(path: &str) -> Result<Btf, BtfError> {
        let data = std::fs::read(path).map_err(|source| BtfError::Io {
            path: path.to_string(),
            source,
        })?;
        Btf::parse(&data)
    }

    /// Parses little-endian BTF bytes.
    ///
    /// # Errors
    /// [`BtfError::Malformed`] for anything that is not well-formed BTF.
    pub fn parse(data: &[u8]) -> Result<Btf, BtfError> {
        if data.len() < HEADER_MIN {
            return Err(BtfError::Malformed("shorter than a header".into()));
        }
        let magic = u16::from_le_bytes([data[0], data[1]]);
        if magic != MAGIC {
            return Err(BtfError::Malformed(format!(
                "bad magic {magic:#x} (big-endian or not BTF)"
            )));
        }
        let hdr_len = u32_at(data, 4)? as usize;
        let section = |off_at: usize, len_at: usize| -> Result<&[u8], BtfError> {
            let off = u32_at(data, off_at)? as usize;
            let len = u32_at(data, len_at)? as usize;
            let start = hdr_len
                .checked_add(off)
                .ok_or_else(|| BtfError::Malformed("section offset overflows".into()))?;
            let end = start
                .checked_add(len)
                .ok_or_else(|| BtfError::Malformed("section length overflows".into()))?;
            data.get(start..end)
                .ok_or_else(|| BtfError::Malformed("section past end of data".into()))
        };
        let type_data = section(8, 12)?;
        let strings = section(16, 20)?.to_vec();
        let types = parse_types(type_data)?;
        let mut btf = Btf {
            types,
            strings,
            structs: HashMap::new(),
        };
        for (id, t) in btf.types.iter().enumerate() {
            if let Type::Composite { name, members, .. } = t {
                let n = btf.string(*name);
                if !n.is_empty() && !members.is_empty() {
                    btf.structs.entry(n.to_string()).or_insert(id as u32);
                }
            }
        }
        Ok(btf)
    }

    fn string(&self, off: u32) -> &str {
        let Some(rest) = self.strings.get(off as usize..) else {
            return "";
        };
        let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
        std::str::from_utf8(&rest[..end]).unwrap_or("")
    }

    fn get(&self, id: u32) -> Result<&Type, BtfError> {
        self.types
            .get(id as usize)
            .ok_or_else(|| BtfError::Malformed(format!("type id {id} out of range")))
    }

    /// Follows typedefs and modifiers to the underlying type id.
    fn strip(&self, mut id: u32) -> Result<u32, BtfError> {
        for _ in 0..MAX_DEPTH {
            match self.get(id)? {
                Type::Alias { target } => id = *target,
                _ => return Ok(id),
            }
        }
        Err(BtfError::Malformed("typedef chain too long".into()))
    }

    /// Size in bytes of type `id`.
    fn size_of(&self, id: u32) -> Result<u32, BtfError> {
        let mut id = id;
        let mut mult: u32 = 1;
        for _ in 0..MAX_DEPTH {
            id = self.strip(id)?;
            match self.get(id)? {
                Type::Int { size, .. } | Type::Enum { size } | Type::Composite { size, .. } => {
                    return Ok(size.saturating_mul(mult));
                }
                Type::Ptr => return Ok(8u32.saturating_mul(mult)),
                Type::Array { elem, len } => {
                    mult = mult.saturating_mul(*len);
                    id = *elem;
                }
                Type::Alias { .. } | Type::Func { .. } | Type::Other => return Ok(0),
            }
        }
        Err(BtfError::Malformed("array nesting too deep".into()))
    }

    /// Whether the struct or union `name` exists.
    pub fn has_struct(&self, name: &str) -> bool {
        self.structs.contains_key(name)
    }

    /// Whether the kernel function `name` is listed (`BTF_KIND_FUNC`): a
    /// BPF helper's implementation (`bpf_get_socket_ptr_cookie`) is there
    /// from the kernel that added it. A linear scan: preflight asks once,
    /// and only on a kernel whose release is older than it supports.
    pub fn has_func(&self, name: &str) -> bool {
        self.types
            .iter()
            .any(|t| matches!(t, Type::Func { name: n } if self.string(*n) == name))
    }

    /// Resolves a dotted member path (`"rtt_min.s.v"`) inside struct `ty`.
    /// Array members are entered at index 0; members of anonymous structs
    /// and unions are found as if they were direct members.
    ///
    /// # Errors
    /// [`BtfError::NoSuchStruct`] or [`BtfError::NoSuchMember`] when the
    /// running kernel lacks it; [`BtfError::Malformed`] when the member
    /// would lie outside the struct (only malformed BTF says so).
    pub fn member(&self, ty: &str, path: &str) -> Result<Field, BtfError> {
        let mut id = *self
            .structs
            .get(ty)
            .ok_or_else(|| BtfError::NoSuchStruct(ty.to_string()))?;
        let outer_bits = self.size_of(id)?.saturating_mul(8);
        let mut field = Field {
            bit_offset: 0,
            bits: outer_bits,
            bitfield: false,
        };
        let mut where_ = ty.to_string();
        for part in path.split('.') {
            id = self.enter_arrays(id)?;
            let (found, member_ty) =
                self.find(id, part, 0)?
                    .ok_or_else(|| BtfError::NoSuchMember {
                        ty: where_.clone(),
                        member: part.to_string(),
                    })?;
            field.bit_offset = field.bit_offset.saturating_add(found.bit_offset);
            field.bits = found.bits;
            field.bitfield = found.bitfield;
            id = member_ty;
            where_ = format!("{where_}.{part}");
        }
        if field
            .bit_offset
            .checked_add(field.bits)
            .is_none_or(|end| end > outer_bits)
        {
            return Err(BtfError::Malformed(format!(
                "{where_} lies outside struct {ty} ({outer_bits} bits)"
            )));
        }
        Ok(field)
    }

    /// Strips modifiers and steps into array element types (index 0).
    fn enter_arrays(&self, id: u32) -> Result<u32, BtfError> {
        let mut id = self.strip(id)?;
        for _ in 0..MAX_DEPTH {
            match self.get(id)? {
                Type::Array { elem, .. } => id = self.strip(*elem)?,
                _ => return Ok(id),
            }
        }
        Err(BtfError::Malformed("array nesting too deep".into()))
    }

    /// Finds member `name` in composite `id`, searching anonymous members.
    fn find(&self, id: u32, name: &str, depth: usize) -> Result<Option<(Field, u32)>, BtfError> {
        if depth > MAX_DEPTH {
            return Err(BtfError::Malformed(
                "anonymous member nesting too deep".into(),
            ));
        }
        let Type::Composite {
            members, kind_flag, ..
        } = self.get(id)?
        else {
            return Ok(None);
        };
        for m in members {
            let (bit_offset, declared_bits) = if *kind_flag {
                (m.offset & 0x00ff_ffff, m.offset >> 24)
            } else {
                (m.offset, 0)
            };
            let mname = self.string(m.name);
            if mname == name {
                return Ok(Some((self.field(m.ty, bit_offset, declared_bits)?, m.ty)));
            }
            if mname.is_empty() {
                let inner = self.strip(m.ty)?;
                if let Some((f, t)) = self.find(inner, name, depth + 1)? {
                    let f = Field {
                        bit_offset: f.bit_offset.saturating_add(bit_offset),
                        ..f
                    };
                    return Ok(Some((f, t)));
                }
            }
        }
        Ok(None)
    }

    /// The position of a member of type `ty` at `bit_offset`, with a declared
    /// bitfield width (`kind_flag` structs) or 0.
    fn field(&self, ty: u32, bit_offset: u32, declared_bits: u32) -> Result<Field, BtfError> {
        let size_bits = self.size_of(ty)?.saturating_mul(8);
        if declared_bits != 0 {
            return Ok(Field {
                bit_offset,
                bits: declared_bits,
                bitfield: declared_bits != size_bits || !bit_offset.is_multiple_of(8),
            });
        }
        // Without kind_flag, a bitfield is an INT whose encoding narrows it.
        if let Type::Int { offset, bits, .. } = self.get(self.strip(ty)?)?
            && (*bits != size_bits || *offset != 0)
        {
            return Ok(Field {
                bit_offset: bit_offset.saturating_add(*offset),
                bits: *bits,
                bitfield: true,
            });
        }
        Ok(Field {
            bit_offset,
            bits: size_bits,
            bitfield: !bit_offset.is_multiple_of(8),
        })
    }
}

/// Parses the type section into records; index 0 is `void`.
fn parse_types(data: &[u8]) -> Result<Vec<Type>, BtfError> {
    let mut types = vec![Type::Other];
    let mut at = 0usize;
    while at < data.len() {
        let name = u32_at(data, at)?;
        let info = u32_at(data, at + 4)?;
        let size_or_type = u32_at(data, at + 8)?;
        at += 12;
        let vlen = (info & 0xffff) as usize;
        let kind = (info >> 24) & 0x1f;
        let kind_flag = info >> 31 == 1;
        let t = match kind {
            1 => {
                let enc = u32_at(data, at)?;
                at += 4;
                Type::Int {
                    size: size_or_type,
                    offset: (enc >> 16) & 0xff,
                    bits: enc & 0xff,
                }
            }
            2 => Type::Ptr,
            3 => {
                let elem = u32_at(data, at)?;
                let len = u32_at(data, at + 8)?;
                at += 12;
                Type::Array { elem, len }
            }
            4 | 5 => {
                let mut members = Vec::with_capacity(vlen.min(4096));
                for _ in 0..vlen {
                    members.push(RawMember {
                        name: u32_at(data, at)?,
                        ty: u32_at(data, at + 4)?,
                        offset: u32_at(data, at + 8)?,
                    });
                    at += 12;
                }
                Type::Composite {
                    name,
                    size: size_or_type,
                    members,
                    kind_flag,
                }
            }
            6 => {
                at = skip(at, vlen, 8, data.len())?;
                Type::Enum { size: size_or_type }
            }
            19 => {
                at = skip(at, vlen, 12, data.len())?;
                Type::Enum { size: size_or_type }
            }
            8..=11 | 18 => Type::Alias {
                target: size_or_type,
            },
            12 => Type::Func { name },
            7 | 16 => Type::Other,
            13 => {
                at = skip(at, vlen, 8, data.len())?;
                Type::Other
            }
            14 | 17 => {
                at = skip(at, 1, 4, data.len())?;
                Type::Other
            }
            15 => {
                at = skip(at, vlen, 12, data.len())?;
                Type::Other
            }
            k => return Err(BtfError::Malformed(format!("unknown type kind {k}"))),
        };
        types.push(t);
    }
    Ok(types)
}

fn skip(at: usize, count: usize, each: usize, len: usize) -> Result<usize, BtfError> {
    let next = count
        .checked_mul(each)
        .and_then(|n| n.checked_add(at))
        .ok_or_else(|| BtfError::Malformed("record length overflows".into()))?;
    if next > len {
        return Err(BtfError::Malformed(format!("truncated at byte {at}")));
    }
    Ok(next)
}

#[cfg(test)]
#[path = "btf_tests.rs"]
mod tests;
