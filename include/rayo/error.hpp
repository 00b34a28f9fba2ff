// Exceptions thrown by rayo. Every failure is one of these; none leaves a tensor half-written.
#pragma once

#include <stdexcept>
#include <string>

#include "rayo/export.hpp"

namespace rayo {

class RAYO_API Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Shapes that do not fit the operation (both shapes are named in the message).
class RAYO_API ShapeError : public Error {
public:
    using Error::Error;
};

// An element type the operation does not take.
class RAYO_API DTypeError : public Error {
public:
    using Error::Error;
};

// An index outside what it indexes: an id of embedding or index_select past the table's rows. The
// CPU raises it before anything is written; a GPU kernel records it, writes zeros in its place,
// and the device raises it at the next host read or synchronize().
class RAYO_API IndexError : public Error {
public:
    using Error::Error;
};

// A backend or driver failure; carries the backend's own error code and its name.
class RAYO_API DeviceError : public Error {
public:
    DeviceError(std::string const& message, long long code = 0, std::string code_name = {})
        : Error(message), code_(code), code_name_(std::move(code_name)) {}
    [[nodiscard]] long long code() const noexcept { return code_; }
    [[nodiscard]] std::string const& code_name() const noexcept { return code_name_; }

private:
    long long code_;
    std::string code_name_;
};

// A device ran out of memory; the message gives the size requested and what was available.
class RAYO_API OutOfMemory : public Error {
public:
    using Error::Error;
};

// The operation is not available for this input on this backend.
class RAYO_API Unsupported : public Error {
public:
    using Error::Error;
};

// A malformed file or serialized object.
class RAYO_API FormatError : public Error {
public:
    using Error::Error;
};

}  // namespace rayo
