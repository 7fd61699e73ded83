// Writes N5 datasets the way the N5 Java library does, with the real Java streams (lz4-java's
// LZ4BlockOutputStream, Apache Commons Compress' gzip / bzip2 / xz streams, java.util.zip's
// DeflaterOutputStream): a big-endian chunk header (mode, ndim, dims; varlength adds the
// element count) then the compressed big-endian elements, x fastest, edge chunks truncated to
// the part inside the dataset, chunks that are all zero not written (a sparse dataset).
//
// Usage: java WriteN5 JOBS_FILE, one job per line:
//   INPUT OUTPUT_DIR DATA_TYPE X,Y,Z BX,BY,BZ COMPRESSION PARAM MODE
// INPUT: the whole array, big-endian, x fastest.  COMPRESSION: raw gzip zlib bzip2 xz lz4.
// PARAM: the compression's level / block size / preset.  MODE: default or varlength.
import java.io.*;
import java.nio.file.*;
import java.util.*;
import java.util.zip.Deflater;
import java.util.zip.DeflaterOutputStream;
import net.jpountz.lz4.LZ4BlockOutputStream;
import org.apache.commons.compress.compressors.bzip2.BZip2CompressorOutputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorOutputStream;
import org.apache.commons.compress.compressors.gzip.GzipParameters;
import org.apache.commons.compress.compressors.xz.XZCompressorOutputStream;

public class WriteN5 {
    static int itemSize(String t) {
        switch (t) {
            case "uint8": case "int8": return 1;
            case "uint16": case "int16": return 2;
            case "uint32": case "int32": case "float32": return 4;
            default: return 8;
        }
    }

    static int[] ints(String s) {
        String[] p = s.split(",");
        int[] out = new int[p.length];
        for (int i = 0; i < p.length; i++) out[i] = Integer.parseInt(p[i]);
        return out;
    }

    static OutputStream wrap(OutputStream out, String compression, int param) throws IOException {
        switch (compression) {
            case "raw": return out;
            case "gzip": {
                GzipParameters p = new GzipParameters();
                p.setCompressionLevel(param);
                return new GzipCompressorOutputStream(out, p);
            }
            case "zlib": return new DeflaterOutputStream(out, new Deflater(param));
            case "bzip2": return new BZip2CompressorOutputStream(out, param);
            case "xz": return new XZCompressorOutputStream(out, param);
            case "lz4": return new LZ4BlockOutputStream(out, param);
            default: throw new IllegalArgumentException("compression " + compression);
        }
    }

    static String attributes(String type, int[] dims, int[] block, String compression, int param) {
        String comp;
        switch (compression) {
            case "raw": comp = "{\"type\":\"raw\"}"; break;
            case "gzip": comp = "{\"type\":\"gzip\",\"level\":" + param + ",\"useZlib\":false}"; break;
            case "zlib": comp = "{\"type\":\"gzip\",\"level\":" + param + ",\"useZlib\":true}"; break;
            case "bzip2": comp = "{\"type\":\"bzip2\",\"blockSize\":" + param + "}"; break;
            case "xz": comp = "{\"type\":\"xz\",\"preset\":" + param + "}"; break;
            default: comp = "{\"type\":\"lz4\",\"blockSize\":" + param + "}";
        }
        return "{\"dimensions\":" + Arrays.toString(dims) + ",\"blockSize\":" + Arrays.toString(block)
                + ",\"dataType\":\"" + type + "\",\"compression\":" + comp + "}";
    }

    static void job(String[] a) throws IOException {
        byte[] input = Files.readAllBytes(Paths.get(a[0]));
        Path root = Paths.get(a[1]);
        String type = a[2];
        int[] dims = ints(a[3]);
        int[] block = ints(a[4]);
        String compression = a[5];
        int param = Integer.parseInt(a[6]);
        boolean varlength = a[7].equals("varlength");
        int item = itemSize(type);
        Files.createDirectories(root);
        Files.write(root.resolve("attributes.json"),
                attributes(type, dims, block, compression, param).getBytes("UTF-8"));
        int[] grid = new int[3];
        for (int d = 0; d < 3; d++) grid[d] = (dims[d] + block[d] - 1) / block[d];
        for (int k = 0; k < grid[2]; k++)
            for (int j = 0; j < grid[1]; j++)
                for (int i = 0; i < grid[0]; i++) {
                    int[] pos = {i, j, k};
                    int[] size = new int[3];
                    for (int d = 0; d < 3; d++)
                        size[d] = Math.min(block[d], dims[d] - pos[d] * block[d]);
                    int n = size[0] * size[1] * size[2];
                    byte[] data = new byte[n * item];
                    boolean any = false;
                    int o = 0;
                    for (int z = 0; z < size[2]; z++)
                        for (int y = 0; y < size[1]; y++) {
                            long gx = (long) pos[0] * block[0];
                            long gy = (long) pos[1] * block[1] + y;
                            long gz = (long) pos[2] * block[2] + z;
                            long src = ((gz * dims[1] + gy) * dims[0] + gx) * item;
                            System.arraycopy(input, (int) src, data, o, size[0] * item);
                            o += size[0] * item;
                        }
                    for (byte b : data) if (b != 0) { any = true; break; }
                    if (!any) continue;
                    Path file = root.resolve(i + "/" + j + "/" + k);
                    Files.createDirectories(file.getParent());
                    try (OutputStream fo = new BufferedOutputStream(Files.newOutputStream(file))) {
                        DataOutputStream header = new DataOutputStream(fo);
                        header.writeShort(varlength ? 1 : 0);
                        header.writeShort(3);
                        for (int d = 0; d < 3; d++) header.writeInt(size[d]);
                        if (varlength) header.writeInt(n);
                        header.flush();
                        OutputStream c = wrap(new FilterOutputStream(fo) {
                            @Override public void close() throws IOException { flush(); }
                        }, compression, param);
                        c.write(data);
                        c.close();
                    }
                }
    }

    public static void main(String[] args) throws IOException {
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            if (line.trim().isEmpty()) continue;
            job(line.trim().split("\\s+"));
        }
    }
}
