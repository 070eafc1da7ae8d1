// distr_io: parallel HDF5 I/O from collective host tasks. A matrix is written to a file by
// every node (each writes the rows experimental::access::even_split gives it), read back into
// a second buffer, transposed through a custom range mapper, and compared with the transpose
// computed serially. Without parallel HDF5 the program says so and exits with 77 (ctest: skipped).
//   distr_io [-n size (256)] [--file path (distr_io.h5)]
#include <celerity.h>

#include "example_common.hpp"

#if defined(__has_include)
#if __has_include(<hdf5.h>)
#include <hdf5.h>
#endif
#endif

#if !defined(H5_HAVE_PARALLEL) || !defined(CELERITY_HAS_MPI_HEADER)
int main() {
    std::printf("distr_io: skipped: parallel HDF5 (hdf5.h with H5_HAVE_PARALLEL) and mpi.h are not available in this build\n");
    return 77;
}
#else
namespace {
using window = celerity::buffer_allocation_window<float, 2>;

/// Dataspaces for the window of the file (the buffer) and of the allocation (memory).
std::pair<hid_t, hid_t> dataspaces(const window& w) {
    hsize_t file_extent[2], file_start[2], mem_extent[2], mem_start[2], count[2];
    for(int d = 0; d < 2; ++d) {
        file_extent[d] = w.get_buffer_range()[d];
        file_start[d] = w.get_window_offset_in_buffer()[d];
        mem_extent[d] = w.get_allocation_range()[d];
        mem_start[d] = w.get_window_offset_in_allocation()[d];
        count[d] = w.get_window_range()[d];
    }
    const hid_t file = H5Screate_simple(2, file_extent, nullptr);
    H5Sselect_hyperslab(file, H5S_SELECT_SET, file_start, nullptr, count, nullptr);
    const hid_t mem = H5Screate_simple(2, mem_extent, nullptr);
    H5Sselect_hyperslab(mem, H5S_SELECT_SET, mem_start, nullptr, count, nullptr);
    return {file, mem};
}

void write_file(celerity::queue& q, celerity::buffer<float, 2> buf, std::string path) {
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor in{buf, cgh, celerity::experimental::access::even_split<2>{}, celerity::read_only_host_task};
        cgh.host_task(celerity::experimental::collective, [=](celerity::experimental::collective_partition part) {
            const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
            H5Pset_fapl_mpio(fapl, part.get_collective_mpi_comm(), MPI_INFO_NULL);
            const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
            const hid_t xfer = H5Pcreate(H5P_DATASET_XFER);
            H5Pset_dxpl_mpio(xfer, H5FD_MPIO_COLLECTIVE);
            const auto w = in.get_allocation_window(part);
            const auto [file_space, mem_space] = dataspaces(w);
            const hid_t set = H5Dcreate(file, "data", H5T_NATIVE_FLOAT, file_space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            if(H5Dwrite(set, H5T_NATIVE_FLOAT, mem_space, file_space, xfer, w.get_allocation()) < 0) throw std::runtime_error("H5Dwrite failed");
            H5Dclose(set), H5Sclose(mem_space), H5Sclose(file_space), H5Pclose(xfer), H5Fclose(file), H5Pclose(fapl);
        });
    });
}

void read_file(celerity::queue& q, celerity::buffer<float, 2> buf, std::string path) {
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor out{buf, cgh, celerity::experimental::access::even_split<2>{}, celerity::write_only_host_task, celerity::no_init};
        cgh.host_task(celerity::experimental::collective, [=](celerity::experimental::collective_partition part) {
            const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
            H5Pset_fapl_mpio(fapl, part.get_collective_mpi_comm(), MPI_INFO_NULL);
            const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
            const hid_t xfer = H5Pcreate(H5P_DATASET_XFER);
            H5Pset_dxpl_mpio(xfer, H5FD_MPIO_COLLECTIVE);
            const auto w = out.get_allocation_window(part);
            const auto [file_space, mem_space] = dataspaces(w);
            const hid_t set = H5Dopen(file, "data", H5P_DEFAULT);
            if(H5Dread(set, H5T_NATIVE_FLOAT, mem_space, file_space, xfer, w.get_allocation()) < 0) throw std::runtime_error("H5Dread failed");
            H5Dclose(set), H5Sclose(mem_space), H5Sclose(file_space), H5Pclose(xfer), H5Fclose(file), H5Pclose(fapl);
        });
    });
}

celerity::subrange<2> transposed(celerity::chunk<2> c) { return {{c.offset[1], c.offset[0]}, {c.range[1], c.range[0]}}; }
} // namespace

int main(int argc, char** argv) {
    const size_t n = static_cast<size_t>(example::option(argc, argv, "-n", 256));
    std::string path = "distr_io.h5";
    for(int i = 1; i + 1 < argc; ++i) {
        if(std::strcmp(argv[i], "--file") == 0) path = argv[i + 1];
    }
    std::vector<float> data(n * n);
    for(size_t i = 0; i < n * n; ++i) data[i] = static_cast<float>((i * 2654435761u) % 1000) / 7.f;

    example::timer timer;
    celerity::queue q;
    celerity::buffer<float, 2> original(data.data(), celerity::range<2>(n, n)), loaded(celerity::range<2>(n, n)), result(celerity::range<2>(n, n));
    write_file(q, original, path);
    read_file(q, loaded, path);
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor in{loaded, cgh, celerity::access::one_to_one{}, celerity::read_only};
        celerity::accessor out{result, cgh, transposed, celerity::write_only, celerity::no_init};
        cgh.parallel_for(celerity::range<2>(n, n), [=] CELERITY_DEVICE_LAMBDA(celerity::item<2> it) { out[{it[1], it[0]}] = in[it]; });
    });
    const auto got = q.fence(result).get();
    bool ok = true;
    for(size_t i = 0; i < n; ++i) {
        for(size_t j = 0; j < n; ++j) ok = ok && got[{i, j}] == data[j * n + i];
    }
    return example::report("distr_io", ok, timer.seconds(), std::to_string(n) + "x" + std::to_string(n) + " through " + path);
}
#endif
