//! Content codings (zstd, brotli, gzip): which one a request accepts, whole bodies
//! compressed for dynamic answers, and kept answers' compressed forms.
//!
//! A kept answer (a list page, an item, a feed) is compressed once per version as an
//! *open stream*: its compressed bytes up to a flush point, with no end written. Each
//! request then closes it with its own trailer (the envelope's `timestamp`, or nothing) in
//! a few bytes written by hand: a stored deflate block and the gzip trailer, a brotli
//! uncompressed meta-block and the last empty one, a raw zstd block marked last. So a
//! compressed read copies what a plain one does, and compresses nothing.

use actix_web::web::Bytes;
use std::io::Write;

/// Bodies larger than this are compressed on the blocking pool, not on the async worker.
pub(crate) const INLINE_COMPRESSION_BYTES: usize = 256 * 1024;

/// A content coding this server writes, in the order it prefers them when a client
/// accepts several equally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    Zstd,
    Brotli,
    Gzip,
}

impl Coding {
    pub const ALL: [Coding; 3] = [Coding::Zstd, Coding::Brotli, Coding::Gzip];

    /// The `Content-Encoding` token.
    pub fn token(self) -> &'static str {
        match self {
            Self::Zstd => "zstd",
            Self::Brotli => "br",
            Self::Gzip => "gzip",
        }
    }

    /// Mixed into a kept body's key to name its compressed form.
    fn salt(self) -> u64 {
        match self {
            Self::Zstd => 0x9e37_79b9_7f4a_7c15,
            Self::Brotli => 0xbf58_476d_1ce4_e5b9,
            Self::Gzip => 0x94d0_49bb_1331_11eb,
        }
    }

    /// The key a kept body's compressed form is kept under, beside the plain one's `key`.
    pub fn key_of(self, key: u64) -> u64 {
        let mut z = key ^ self.salt();
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The entity tag of a representation in `coding`: `"x"` becomes `"x-gzip"`. Each coding
/// has a tag of its own (RFC 9110 §8.8.3), so that a cache choosing among its stored
/// variants by a `304`'s tag never hands one client another's coding.
pub fn coded_etag(etag: &str, coding: Option<Coding>) -> std::borrow::Cow<'_, str> {
    match (coding, etag.strip_suffix('"')) {
        (Some(coding), Some(open)) => format!("{open}-{}\"", coding.token()).into(),
        _ => etag.into(),
    }
}

/// An `If-Match` value with any coding suffix taken off each tag: a client that read a
/// compressed answer holds the item's tag in that form, and it names the same item.
pub fn uncoded_tags(header: &str) -> String {
    header
        .split(',')
        .map(|tag| {
            let tag = tag.trim();
            Coding::ALL
                .iter()
                .find_map(|coding| {
                    let open = tag.strip_suffix('"')?.strip_suffix(coding.token())?.strip_suffix('-')?;
                    Some(format!("{open}\""))
                })
                .unwrap_or_else(|| tag.to_owned())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The coding to answer in for an `Accept-Encoding` header, by its q-values (ties go to
/// the order of [`Coding::ALL`]); `None`: identity.
pub fn negotiate(accept_encoding: Option<&str>) -> Option<Coding> {
    let header = accept_encoding?;
    let mut qualities = [None::<u16>; 3];
    let mut any = None::<u16>;
    for part in header.split(',') {
        let mut fields = part.split(';');
        let name = fields.next().unwrap_or("").trim();
        let quality = fields
            .filter_map(|f| f.trim().strip_prefix("q=").or_else(|| f.trim().strip_prefix("Q=")))
            .map(parse_quality)
            .next()
            .unwrap_or(Some(1000));
        let Some(quality) = quality else { continue };
        let is = |token: &str| name.eq_ignore_ascii_case(token);
        let slot = if is("zstd") {
            &mut qualities[0]
        } else if is("br") {
            &mut qualities[1]
        } else if is("gzip") || is("x-gzip") {
            &mut qualities[2]
        } else if name == "*" {
            &mut any
        } else {
            continue;
        };
        *slot = Some(quality);
    }
    let mut best: Option<(u16, Coding)> = None;
    for (coding, quality) in Coding::ALL.into_iter().zip(qualities) {
        let quality = quality.or(any).unwrap_or(0);
        if quality > 0 && best.is_none_or(|(q, _)| quality > q) {
            best = Some((quality, coding));
        }
    }
    best.map(|(_, coding)| coding)
}

/// A q-value in thousandths (`0` to `1` with up to three decimals); `None` when malformed.
fn parse_quality(text: &str) -> Option<u16> {
    let text = text.trim();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Thousandths: "5" is 500, "05" is 50.
    let fraction = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(3)
        .fold(0u16, |n, b| n * 10 + u16::from(b - b'0'));
    match whole {
        "0" => Some(fraction),
        "1" if fraction == 0 => Some(1000),
        _ => None,
    }
}

/// Whether answers of this `Content-Type` are worth compressing (text; never media that
/// is compressed already).
pub fn is_compressible(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim().as_bytes();
    let starts = |prefix: &str| {
        essence.len() >= prefix.len() && essence[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
    };
    let ends = |suffix: &str| {
        essence.len() >= suffix.len()
            && essence[essence.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
    };
    let is = |whole: &str| essence.eq_ignore_ascii_case(whole.as_bytes());
    starts("text/")
        || is("application/json")
        || is("application/xml")
        || is("application/javascript")
        || is("image/svg+xml")
        || ends("+json")
        || ends("+xml")
}

/// How hard to compress: kept forms are made once per change; dynamic answers on every
/// request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    Kept,
    Dynamic,
}

/// `body` compressed whole.
pub fn compress(coding: Coding, body: &[u8], effort: Effort) -> Vec<u8> {
    let open = open_stream(coding, body, effort);
    let (kept, tail) = close_stream(coding, &open, b"");
    let mut whole = Vec::with_capacity(kept.len() + tail.len());
    whole.extend_from_slice(kept);
    whole.extend_from_slice(&tail);
    whole
}

/// `prefix` compressed as an open stream (what is kept): the coding's bytes up to a flush
/// point, byte-aligned, with no end written; for gzip followed by eight bytes that are
/// not sent (the CRC-32 and length of `prefix`, which the trailer continues).
pub fn open_stream(coding: Coding, prefix: &[u8], effort: Effort) -> Vec<u8> {
    match coding {
        Coding::Zstd => {
            let level = if effort == Effort::Kept { 6 } else { 3 };
            let mut encoder =
                zstd::stream::write::Encoder::new(Vec::with_capacity(prefix.len() / 3 + 64), level)
                    .expect("a zstd encoder with a fixed level starts");
            // Flushed, not finished: the frame stays open for the last block.
            encoder.write_all(prefix).expect("writing to memory");
            encoder.flush().expect("writing to memory");
            let open = std::mem::take(encoder.get_mut());
            if open.is_empty() {
                // Nothing was written, not even the frame header: the magic number, a
                // descriptor with no size, checksum or dictionary, and a 1 MiB window.
                return vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x50];
            }
            open
        }
        Coding::Brotli => {
            let quality = if effort == Effort::Kept { 6 } else { 4 };
            // The window only as large as the body needs: a smaller one is faster to set up.
            let window = (usize::BITS - prefix.len().leading_zeros() + 1).clamp(10, 22);
            let mut out = Vec::with_capacity(prefix.len() / 3 + 64);
            let mut writer = brotli::CompressorWriter::new(&mut out, 4096, quality, window);
            writer.write_all(prefix).expect("writing to memory");
            writer.flush().expect("writing to memory");
            // Dropping the writer would finish the stream: keep what the flush wrote.
            let open = writer.get_ref().to_vec();
            drop(writer);
            open
        }
        Coding::Gzip => {
            let level = if effort == Effort::Kept { 6 } else { 5 };
            let mut deflate = flate2::Compress::new(flate2::Compression::new(level), false);
            let mut out = Vec::with_capacity(prefix.len() / 3 + 64);
            // The gzip header: deflate, no name or time, unknown OS.
            out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
            let mut input = prefix;
            // Until every byte is in and the flush had room to finish (output left unfilled).
            loop {
                out.reserve(input.len() / 2 + 1024);
                let before = deflate.total_in();
                deflate
                    .compress_vec(input, &mut out, flate2::FlushCompress::Sync)
                    .expect("deflate into memory");
                input = &input[(deflate.total_in() - before) as usize..];
                if input.is_empty() && out.len() < out.capacity() {
                    break;
                }
            }
            let mut crc = crc32fast::Hasher::new();
            crc.update(prefix);
            out.extend_from_slice(&crc.finalize().to_le_bytes());
            out.extend_from_slice(&(prefix.len() as u32).to_le_bytes());
            out
        }
    }
}

/// The part of an open stream that is sent, and the bytes that close it with `trailer`.
pub fn close_stream<'a>(coding: Coding, open: &'a [u8], trailer: &[u8]) -> (&'a [u8], Vec<u8>) {
    match coding {
        Coding::Zstd => {
            // Raw blocks of at most 64 KiB (within any window the encoder chose), the last
            // one marked: Last_Block, Block_Type = Raw (0), Block_Size.
            let mut tail = Vec::with_capacity(6 + trailer.len());
            let mut chunks = trailer.chunks(1 << 16).peekable();
            if chunks.peek().is_none() {
                tail.extend_from_slice(&[1, 0, 0]);
            }
            while let Some(chunk) = chunks.next() {
                let header = u32::from(chunks.peek().is_none()) | ((chunk.len() as u32) << 3);
                tail.extend_from_slice(&header.to_le_bytes()[..3]);
                tail.extend_from_slice(chunk);
            }
            (open, tail)
        }
        Coding::Brotli => {
            let mut tail = Vec::with_capacity(4 + trailer.len());
            for chunk in trailer.chunks(1 << 16) {
                // An uncompressed meta-block: ISLAST 0, MNIBBLES 4 (code 0), MLEN - 1 in 16
                // bits, ISUNCOMPRESSED 1; then padding to the byte and the bytes.
                let bits = ((chunk.len() as u32 - 1) << 3) | (1 << 19);
                tail.extend_from_slice(&bits.to_le_bytes()[..3]);
                tail.extend_from_slice(chunk);
            }
            // The last meta-block, empty: ISLAST 1, ISLASTEMPTY 1.
            tail.push(0b11);
            (open, tail)
        }
        Coding::Gzip => {
            let (stream, sums) = open.split_at(open.len() - 8);
            let crc = u32::from_le_bytes(sums[..4].try_into().expect("four bytes"));
            let length = u32::from_le_bytes(sums[4..].try_into().expect("four bytes"));
            let mut tail = Vec::with_capacity(trailer.len() + 32);
            let mut chunks = trailer.chunks(0xffff).peekable();
            if chunks.peek().is_none() {
                tail.extend_from_slice(&[1, 0, 0, 0xff, 0xff]); // a last stored block, empty
            }
            while let Some(chunk) = chunks.next() {
                // A stored block (BFINAL on the last): the stream is byte-aligned after the
                // flush, so its header is a whole byte, then LEN and NLEN.
                let last = u8::from(chunks.peek().is_none());
                let len = chunk.len() as u16;
                tail.push(last);
                tail.extend_from_slice(&len.to_le_bytes());
                tail.extend_from_slice(&(!len).to_le_bytes());
                tail.extend_from_slice(chunk);
            }
            let mut hasher = crc32fast::Hasher::new_with_initial_len(crc, u64::from(length));
            hasher.update(trailer);
            tail.extend_from_slice(&hasher.finalize().to_le_bytes());
            tail.extend_from_slice(&length.wrapping_add(trailer.len() as u32).to_le_bytes());
            (stream, tail)
        }
    }
}

/// [`close_stream`] on a shared kept form: the part sent, without copying it.
pub fn close_shared(coding: Coding, open: &Bytes, trailer: &[u8]) -> (Bytes, Bytes) {
    let (sent, tail) = close_stream(coding, open, trailer);
    (open.slice(..sent.len()), Bytes::from(tail))
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn decode(coding: Coding, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match coding {
            Coding::Zstd => {
                zstd::stream::read::Decoder::new(bytes).unwrap().read_to_end(&mut out).unwrap();
            }
            Coding::Brotli => {
                brotli::Decompressor::new(bytes, 4096).read_to_end(&mut out).unwrap();
            }
            Coding::Gzip => {
                // The multi-member decoder would hide a second member; ours has one.
                flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).unwrap();
            }
        }
        out
    }

    #[test]
    fn open_streams_close_with_any_trailer_into_the_whole_body() {
        let body: Vec<u8> = (0..4000)
            .flat_map(|i| format!("{{\"slug\":\"post-{i}\",\"n\":{}}},", i * 7).into_bytes())
            .collect();
        let trailers: [&[u8]; 4] = [b"", b",\"timestamp\":\"2026-11-26T17:00:00Z\"}", &[b'x'; 70_000], b"}"];
        for coding in Coding::ALL {
            for prefix in [&body[..], &body[..1], b""] {
                let open = open_stream(coding, prefix, Effort::Kept);
                for trailer in trailers {
                    let (sent, tail) = close_stream(coding, &open, trailer);
                    let whole = [sent, &tail[..]].concat();
                    let expected = [prefix, trailer].concat();
                    assert_eq!(
                        decode(coding, &whole),
                        expected,
                        "{coding:?} {} + {}",
                        prefix.len(),
                        trailer.len()
                    );
                }
            }
            let whole = compress(coding, &body, Effort::Dynamic);
            assert!(whole.len() < body.len() / 4, "{coding:?}: {} of {}", whole.len(), body.len());
            assert_eq!(decode(coding, &whole), body);
        }
    }

    #[test]
    fn the_coding_follows_the_q_values_then_our_preference() {
        let cases = [
            (None, None),
            (Some(""), None),
            (Some("identity"), None),
            (Some("gzip, deflate, br, zstd"), Some(Coding::Zstd)),
            (Some("gzip, deflate, br"), Some(Coding::Brotli)),
            (Some("gzip"), Some(Coding::Gzip)),
            (Some("x-gzip"), Some(Coding::Gzip)),
            (Some("br;q=0.5, gzip;q=0.8"), Some(Coding::Gzip)),
            (Some("zstd;q=0, br;q=0.001"), Some(Coding::Brotli)),
            (Some("*"), Some(Coding::Zstd)),
            (Some("*;q=0.5, zstd;q=0"), Some(Coding::Brotli)),
            (Some("gzip;q=0"), None),
            (Some("GZIP; Q=1.000"), Some(Coding::Gzip)),
            (Some("gzip;q=2, br;q=0.x"), None),
        ];
        for (header, expected) in cases {
            assert_eq!(negotiate(header), expected, "{header:?}");
        }
    }

    #[test]
    fn each_coding_has_a_tag_of_its_own_and_if_match_takes_any() {
        assert_eq!(coded_etag("\"ab12\"", Some(Coding::Brotli)), "\"ab12-br\"");
        assert_eq!(coded_etag("\"ab12\"", None), "\"ab12\"");
        assert_eq!(
            uncoded_tags("\"ab12-br\", W/\"cd-gzip\",\"ef-zstd\", \"gh\", *"),
            "\"ab12\", W/\"cd\", \"ef\", \"gh\", *"
        );
    }

    #[test]
    fn text_is_compressible_and_media_is_not() {
        for yes in ["application/json", "application/rss+xml; charset=utf-8", "text/html", "image/svg+xml"] {
            assert!(is_compressible(yes), "{yes}");
        }
        for no in ["image/png", "image/webp", "application/zip", "video/mp4", ""] {
            assert!(!is_compressible(no), "{no}");
        }
    }

    #[test]
    fn compressed_forms_have_keys_of_their_own() {
        let keys: std::collections::HashSet<u64> =
            Coding::ALL.into_iter().flat_map(|c| [c.key_of(1), c.key_of(2)]).chain([1, 2]).collect();
        assert_eq!(keys.len(), 8);
    }
}
