//===- enigma-tblgen.cpp - Op family function tables from TableGen --------===//
//
// -gen-function-table prints, from one op family's .td file, the table that
// every layer reads (docs/design/op-families.md):
//
//   ENIGMA_FUNCTION(family, name, Rule, arity, "args", "floatOp",
//                   "signedOp", "unsignedOp", lanes, "doc")
//     one row per Enigma_Function record: the Python name, how the builder
//     types its operands (Rule, an enigma::FunctionRule), the parameters,
//     the op built for each operand kind and the user-facing doc.
//   ENIGMA_SPELLING("op", "metal", "cuda", signedOperands, alwaysSigned)
//     how the C-family emitters print an op as a call: one row per
//     Enigma_Spelling record and per op that declares its Metal name.
//
// The consumer defines the macro it wants before including the file. Each
// row is checked here: an enigma op a function names must exist in the
// family, and every operand kind the rule accepts must have an op.
//
//===----------------------------------------------------------------------===//
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Main.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

using namespace llvm;

namespace {

enum class Action { FunctionTable };

cl::opt<Action> action(cl::desc("What to generate"),
                       cl::values(clEnumValN(Action::FunctionTable,
                                             "gen-function-table",
                                             "The op family's function table")));

/// `s` as a C string literal.
std::string quote(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    default: out += c;
    }
  }
  return out + "\"";
}

/// `s` with each run of white space (line breaks of a [{ }] block) one
/// space.
std::string oneLine(StringRef s) {
  std::string out;
  for (StringRef word : llvm::split(s.trim(), ' ')) {
    for (StringRef part : llvm::split(word, '\n')) {
      part = part.trim();
      if (part.empty())
        continue;
      out += (out.empty() ? "" : " ") + part.str();
    }
  }
  return out;
}

/// The records of `className` in the order the .td file defines them.
std::vector<const Record *> inOrder(RecordKeeper &records,
                                    StringRef className) {
  std::vector<const Record *> out;
  for (const Record *r : records.getAllDerivedDefinitionsIfDefined(className))
    out.push_back(r);
  llvm::sort(out, [](const Record *a, const Record *b) {
    return a->getID() < b->getID();
  });
  return out;
}

/// Which operand kinds a rule builds an op for (float, signed, unsigned).
struct Kinds {
  bool floats, ints;
};

Kinds kindsOf(const Record *row, StringRef rule) {
  static const StringSet<> floatOnly = {
      "Float", "FloatPredicate", "Vector", "VectorToScalar",
      "VectorAndScalar", "Pack"};
  static const StringSet<> intOnly = {"Integer", "IntegerToUnsigned",
                                      "ExtractBits", "InsertBits", "Unpack",
                                      "GroupBitwise"};
  // The vote and lane-query rules take bools or nothing: their one op is
  // the row's own, listed for every kind.
  static const StringSet<> both = {"Numeric", "Compare", "GroupReduce",
                                   "GroupScan", "GroupMinMax",
                                   "GroupShuffle", "GroupVote", "GroupBallot",
                                   "GroupLaneQuery"};
  if (floatOnly.contains(rule))
    return {true, false};
  if (intOnly.contains(rule))
    return {false, true};
  if (both.contains(rule))
    return {true, true};
  PrintFatalError(row->getLoc(), "unknown function rule '" + rule + "'");
}

/// The op an Enigma_Function record builds for one operand kind: its own
/// field when set, else its `fnOp`, else (for a record that is also an
/// op) that op.
std::string opFor(const Record *row, StringRef field) {
  StringRef own = row->getValueAsString(field);
  if (!own.empty())
    return own.str();
  StringRef op = row->getValueAsString("fnOp");
  if (!op.empty())
    return op.str();
  if (row->isSubClassOf("Op"))
    return "enigma." + row->getValueAsString("opName").str();
  return "";
}

bool emitFunctionTable(raw_ostream &os, RecordKeeper &records) {
  emitSourceFileHeader("Enigma op family function table", os);

  // The enigma ops of this family, by full name.
  StringSet<> familyOps;
  for (const Record *op : records.getAllDerivedDefinitionsIfDefined("Op"))
    familyOps.insert("enigma." + op->getValueAsString("opName").str());

  os << "#ifdef ENIGMA_FUNCTION\n";
  StringSet<> names;
  for (const Record *row : inOrder(records, "Enigma_Function")) {
    StringRef name = row->getValueAsString("fnName");
    StringRef rule = row->getValueAsString("fnRule");
    if (!names.insert(name).second)
      PrintFatalError(row->getLoc(), "function '" + name + "' is defined twice");
    Kinds kinds = kindsOf(row, rule);
    std::string floatOp = kinds.floats ? opFor(row, "fnFloatOp") : "";
    std::string signedOp = kinds.ints ? opFor(row, "fnSignedOp") : "";
    std::string unsignedOp = kinds.ints ? opFor(row, "fnUnsignedOp") : "";
    for (const std::string &op : {floatOp, signedOp, unsignedOp}) {
      StringRef opName = StringRef(op).split(':').first;
      if (opName.starts_with("enigma.") && !familyOps.contains(opName))
        PrintFatalError(row->getLoc(), "function '" + name + "' names " +
                                           opName +
                                           ", which is not an op of this "
                                           "family");
    }
    if ((kinds.floats && floatOp.empty()) ||
        (kinds.ints && (signedOp.empty() || unsignedOp.empty())))
      PrintFatalError(row->getLoc(), "function '" + name +
                                         "' has no op for an operand kind "
                                         "its rule accepts");
    std::vector<StringRef> args = row->getValueAsListOfStrings("fnArgs");
    std::string argList;
    for (StringRef a : args)
      argList += (argList.empty() ? "" : ",") + a.str();
    os << "ENIGMA_FUNCTION(" << quote(row->getValueAsString("fnFamily"))
       << ", " << quote(name) << ", " << rule << ", " << args.size() << ", "
       << quote(argList) << ", " << quote(floatOp) << ", " << quote(signedOp)
       << ", " << quote(unsignedOp) << ", " << row->getValueAsInt("fnLanes")
       << ",\n    " << quote(oneLine(row->getValueAsString("fnDoc")))
       << ")\n";
  }
  os << "#undef ENIGMA_FUNCTION\n#endif\n\n";

  os << "#ifdef ENIGMA_SPELLING\n";
  StringSet<> spelled;
  auto spelling = [&](const Record *rec, StringRef op) {
    if (!spelled.insert(op).second)
      PrintFatalError(rec->getLoc(), "op " + op + " is spelled twice");
    os << "ENIGMA_SPELLING(" << quote(op) << ", "
       << quote(rec->getValueAsString("metalName")) << ", "
       << quote(rec->getValueAsString("cudaName")) << ", "
       << rec->getValueAsInt("signedOperands") << ", "
       << (rec->getValueAsBit("alwaysSigned") ? "true" : "false") << ")\n";
  };
  for (const Record *rec : inOrder(records, "Enigma_Spelling"))
    spelling(rec, rec->isSubClassOf("Op")
                      ? "enigma." + rec->getValueAsString("opName").str()
                      : rec->getValueAsString("spelledOp").str());
  os << "#undef ENIGMA_SPELLING\n#endif\n";
  return false;
}

bool emit(raw_ostream &os, RecordKeeper &records) {
  switch (action) {
  case Action::FunctionTable:
    return emitFunctionTable(os, records);
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv);
  return TableGenMain(argv[0], &emit);
}
