//! CRC-32 (IEEE 802.3: reflected polynomial 0xEDB88320, initial value and final XOR 0xFFFFFFFF),
//! the checksum V4 fragments carry over their reassembled logical bytes, written as 8 lowercase
//! hex digits (`docs/mapper-zcode-app-server.md` §3 cites the source).

const TABLE: [u32; 256] = table();

const fn table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            bit += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
}

pub fn checksum(bytes: &[u8]) -> u32 {
    !bytes
        .iter()
        .fold(!0u32, |crc, byte| TABLE[((crc ^ u32::from(*byte)) & 0xFF) as usize] ^ (crc >> 8))
}

/// The wire form: 8 lowercase hex digits, zero-padded.
pub fn hex(bytes: &[u8]) -> String {
    format!("{:08x}", checksum(bytes))
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_the_ieee_check_values() {
        // The standard check value of CRC-32/ISO-HDLC, and two known short inputs.
        assert_eq!(super::hex(b"123456789"), "cbf43926");
        assert_eq!(super::hex(b""), "00000000");
        assert_eq!(super::hex(b"a"), "e8b7be43");
        assert_eq!(super::hex("{\"a\":\"é\"}".as_bytes()).len(), 8);
    }
}
